#include "dmlps/bench/run_limits.h"

#include <cmath>

namespace dmlps::bench {

void CheckRunLimits(const RunLimits& limits, const RunLimitNames& names,
                    std::vector<std::string>* problems) {
  const auto add = [problems](std::string_view name, std::string_view what) {
    problems->push_back(std::string(name) + std::string(what));
  };
  if (!(limits.target >= 0 && limits.target <= 1)) add(names.target, " must be in [0, 1]");
  if (limits.eval_every < 1) add(names.eval_every, " must be at least 1");
  if (limits.max_iterations < 0) add(names.max_iterations, " must not be negative");
  if (!(limits.max_seconds >= 0) || !std::isfinite(limits.max_seconds)) {
    add(names.max_seconds, " must not be negative");
  }
  if (limits.target == 0 && limits.max_iterations == 0 && limits.max_seconds == 0) {
    problems->push_back(std::string(names.no_end));
  }
}

}  // namespace dmlps::bench
