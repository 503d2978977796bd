#include "dmlps/bench/experiment.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <system_error>

#include "dmlps/bench/run_limits.h"
#include "dmlps/sync/registry.h"

namespace dmlps::bench {
namespace {

// A whole non-negative integer, or nothing.
std::optional<int64_t> ParseCount(std::string_view text) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value;
}

// 'text', built by appending: GCC 12 warns falsely (-Wrestrict) about
// "'" + std::string(...).
std::string Quoted(std::string_view text) {
  std::string quoted;
  quoted.reserve(text.size() + 2);
  quoted += '\'';
  quoted += text;
  quoted += '\'';
  return quoted;
}

std::vector<std::string_view> SplitCommas(std::string_view text) {
  std::vector<std::string_view> items;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    items.push_back(text.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return items;
}

// The factors as the user would type them, 1,1,1,4, with a run of more
// than three equal ones shortened: 1 (x4095),4.
std::string JoinFactors(const std::vector<worker::StragglerSpec>& specs) {
  std::string text;
  for (size_t i = 0; i < specs.size();) {
    size_t run = 1;
    while (i + run < specs.size() && specs[i + run].slowdown == specs[i].slowdown) ++run;
    const size_t shown = run > 3 ? 1 : run;
    for (size_t k = 0; k < shown; ++k) {
      if (!text.empty()) text += ',';
      text += fmt::format("{}", specs[i].slowdown);
    }
    if (run > 3) text += fmt::format(" (x{})", run);
    i += run;
  }
  return text;
}

}  // namespace

std::string CodecsName(const Codecs& codecs) {
  return compress::CodecName(codecs.push) + "/" + compress::CodecName(codecs.pull);
}

std::vector<std::string> CodecsNames(const std::vector<Codecs>& codecs) {
  std::vector<std::string> names;
  for (const Codecs& c : codecs) names.push_back(CodecsName(c));
  return names;
}

Result<Codecs> ParseCodecs(std::string_view entry, const compress::Codec& pull) {
  const size_t slash = entry.find('/');
  Codecs codecs{.pull = pull};
  DMLPS_ASSIGN_OR_RETURN(codecs.push, compress::ParseCodec(entry.substr(0, slash)));
  if (slash != std::string_view::npos) {
    DMLPS_ASSIGN_OR_RETURN(codecs.pull, compress::ParseCodec(entry.substr(slash + 1)));
  }
  return codecs;
}

Result<sync::PolicyConfig> PolicyFor(std::string_view entry, const Experiment& experiment) {
  sync::PolicyConfig config;
  // sync-switch places its switch by the run's target or iteration limit.
  config.job = experiment.job;
  config.momentum_every = experiment.momentum_every;
  // A quarter of a worker's batch: much smaller and a chunk's or token's
  // message round trip costs more than its compute.
  config.chunk = std::max<int64_t>(1, (experiment.job.batch + 3) / 4);
  config.token_size = config.chunk;
  Status s = sync::ApplyEntry(entry, &config);
  if (s.ok()) s = sync::CheckPolicy(config);
  if (!s.ok()) return Status::InvalidArgument(Quoted(entry) + ": " + s.message());
  return config;
}

Result<std::vector<double>> ParsePerWorker(std::string_view text, int64_t workers) {
  std::vector<double> values;
  for (std::string_view item : SplitCommas(text)) {
    double value = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() ||
        !std::isfinite(value)) {
      return Status::InvalidArgument(Quoted(item) + " is not a number");
    }
    values.push_back(value);
  }
  if (values.size() == 1) return std::vector<double>(static_cast<size_t>(workers), values[0]);
  if (static_cast<int64_t>(values.size()) != workers) {
    return Status::InvalidArgument(std::to_string(values.size()) + " values for " +
                                   std::to_string(workers) +
                                   " workers (give one for all, or one per worker)");
  }
  return values;
}

Result<std::pair<int64_t, std::string>> ParseRankEntry(std::string_view entry, int64_t workers) {
  const size_t eq = entry.find('=');
  int64_t rank = -1;
  if (eq != std::string_view::npos && eq > 0 && entry.find_first_not_of("0123456789") == eq &&
      eq < 7) {
    rank = ParseCount(entry.substr(0, eq)).value_or(-1);
  }
  if (rank < 0 || rank >= workers) {
    return Status::InvalidArgument(Quoted(entry) + " is not RANK=I:V,... with RANK in [0, " +
                                   std::to_string(workers - 1) + "]");
  }
  return std::pair<int64_t, std::string>(rank, std::string(entry.substr(eq + 1)));
}

std::string DescribeExperiment(const Experiment& e) {
  std::string text =
      fmt::format("{} workers, {}, {}, batch {}, lr {}, slowdown {}", e.job.workers, e.job.model,
                  e.job.data, e.job.batch, e.job.lr, JoinFactors(e.stragglers));
  if (e.momentum_every > 0) text += fmt::format(", momentum every {} pushes", e.momentum_every);
  if (e.job.target_accuracy > 0) {
    text += fmt::format(", target {}", e.job.target_accuracy);
  } else {
    text += ", no target (times are to the end of each run)";
  }
  if (e.job.max_iterations > 0)
    text += fmt::format(", at most {} iterations", e.job.max_iterations);
  text += fmt::format(", {} run{} each", e.repeat, e.repeat == 1 ? "" : "s");
  return text;
}

// ValidateExperiment speaks of the run's limits as dmlps-bench's flags.
constexpr RunLimitNames kLimitFlags = {
    "--target", "--eval-every", "--max-iterations", "--max-seconds",
    "no end to a run: give --target, --max-iterations or --max-seconds"};

std::vector<std::string> ValidateExperiment(const Experiment& experiment) {
  std::vector<std::string> problems;
  if (experiment.job.workers < 1) problems.push_back("--workers must be at least 1");
  if (experiment.policies.empty()) problems.push_back("--policies: no policy given");
  for (const std::string& entry : experiment.policies) {
    if (experiment.job.workers < 1 || experiment.job.batch < 1) break;
    if (Result<sync::PolicyConfig> p = PolicyFor(entry, experiment); !p.ok()) {
      problems.push_back("--policies: " + p.status().message());
    }
  }
  if (static_cast<int64_t>(experiment.stragglers.size()) != experiment.job.workers) {
    problems.push_back("straggler profiles for " + std::to_string(experiment.stragglers.size()) +
                       " workers, not " + std::to_string(experiment.job.workers));
  }
  for (size_t r = 0; r < experiment.stragglers.size(); ++r) {
    for (const std::string& p : worker::ValidateStragglerSpec(experiment.stragglers[r])) {
      problems.push_back("worker " + std::to_string(r) + ": " + p);
    }
  }
  if (experiment.job.batch < 1) problems.push_back("--batch must be at least 1");
  if (!(experiment.job.lr > 0) || !std::isfinite(experiment.job.lr))
    problems.push_back("--lr must be positive");
  if (!(experiment.job.momentum >= 0 && experiment.job.momentum < 1)) {
    problems.push_back("--momentum must be in [0, 1)");
  }
  CheckRunLimits({experiment.job.target_accuracy, experiment.job.eval_every,
                  experiment.job.max_iterations, experiment.job.max_seconds},
                 kLimitFlags, &problems);
  if (experiment.repeat < 1) problems.push_back("--repeat must be at least 1");
  if (experiment.codecs.empty()) problems.push_back("--codecs: no codec given");
  for (size_t i = 0; i < experiment.codecs.size(); ++i) {
    const Codecs& c = experiment.codecs[i];
    for (const compress::Codec* codec : {&c.push, &c.pull}) {
      if (Status s = compress::ValidateCodec(*codec); !s.ok())
        problems.push_back("--codecs: " + s.message());
    }
    if (std::find(experiment.codecs.begin(), experiment.codecs.begin() + static_cast<long>(i), c) !=
        experiment.codecs.begin() + static_cast<long>(i)) {
      problems.push_back("--codecs: " + CodecsName(c) + " is listed twice");
    }
  }
  return problems;
}

}  // namespace dmlps::bench
