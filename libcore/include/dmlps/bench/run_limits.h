// When a run ends: at a target accuracy, or at an iteration or time limit.
// A simulated run (sim::SimConfig) and a benchmark's experiment (Experiment)
// take the same limits and check them alike; only their names differ.
#ifndef DMLPS_BENCH_RUN_LIMITS_H_
#define DMLPS_BENCH_RUN_LIMITS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dmlps::bench {

struct RunLimits {
  double target = 0;           // accuracy in [0, 1]; 0: no target
  int64_t eval_every = 1;      // iterations between evaluations
  int64_t max_iterations = 0;  // 0: no limit
  double max_seconds = 0;      // 0: no limit
};

// How problems name the limits to the person who set them: as flags
// ("--max-seconds") or as fields ("max_seconds").
struct RunLimitNames {
  std::string_view target;
  std::string_view eval_every;
  std::string_view max_iterations;
  std::string_view max_seconds;
  std::string_view no_end;  // the whole problem when nothing would end a run
};

// Appends to `problems` one message per limit out of range, and one when no
// limit is set, since such a run would never end.
void CheckRunLimits(const RunLimits& limits, const RunLimitNames& names,
                    std::vector<std::string>* problems);

}  // namespace dmlps::bench

#endif  // DMLPS_BENCH_RUN_LIMITS_H_
