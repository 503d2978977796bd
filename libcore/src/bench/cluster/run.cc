#include "dmlps/bench/cluster/run.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <random>
#include <utility>

namespace dmlps::bench {

namespace fs = std::filesystem;

std::string RunFolderName(const std::string& policy, int64_t repeat) {
  std::string tag = policy;
  for (char& c : tag) {
    if (c == ':' || c == '/') c = '-';
  }
  return tag + "-" + std::to_string(repeat);
}

std::vector<std::string> RepeatOrder(const std::vector<std::string>& policies, uint64_t seed,
                                     int64_t repeat, bool shuffle) {
  std::vector<std::string> order = policies;
  if (!shuffle) return order;
  // Fisher-Yates on a generator of fixed definition (mt19937_64 is one;
  // std::shuffle and the standard distributions are not), so that a
  // repeat's order is the same wherever it is run again.
  std::mt19937_64 random(seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(repeat));
  for (size_t i = order.size(); i > 1; --i) {
    std::swap(order[i - 1], order[random() % i]);
  }
  return order;
}

std::string DescribeOutcome(const RunResult& r, bool has_target) {
  if (!r.failure.empty()) return "FAILED: " + r.failure;
  const char* what = !has_target ? "ran"
                     : r.reached ? "reached the target in"
                                 : "missed the target after";
  return fmt::format("{} {:.2f} s, {} iterations, accuracy {:.4f}, compute ratio {:.3f}/{:.3f}",
                     what, r.seconds, r.iterations, r.accuracy, r.compute_ratio_mean,
                     r.compute_ratio_min);
}

std::vector<RunResult> RunExperiment(const Experiment& experiment, const ExperimentOptions& options,
                                     const std::atomic<int>* signal) {
  ClusterOptions cluster = options.cluster;
  const int64_t total = experiment.repeat *
                        static_cast<int64_t>(experiment.policies.size() * experiment.codecs.size());
  // Runs are named by their policy, and by their codecs where the table compares them.
  const bool compares = experiment.codecs != std::vector<Codecs>{Codecs{}};
  int64_t done = 0;
  std::vector<RunResult> runs;
  for (int64_t rep = 1; rep <= experiment.repeat && signal->load() == 0; ++rep) {
    Experiment e = experiment;
    if (options.seed_per_repeat) {
      e.job.seed = experiment.job.seed + static_cast<uint64_t>(rep - 1);
      for (worker::StragglerSpec& s : e.stragglers) s.seed = e.job.seed;
    }
    const std::vector<std::string> order =
        RepeatOrder(experiment.policies, experiment.job.seed, rep, options.shuffle);
    if (options.shuffle) {
      std::string listed;
      for (const std::string& policy : order) listed += (listed.empty() ? "" : ", ") + policy;
      spdlog::info("repeat {}/{} in the order {}", rep, experiment.repeat, listed);
    }
    for (const std::string& policy : order) {
      for (const Codecs& codecs : experiment.codecs) {
        if (signal->load() != 0) break;
        ++done;
        const std::string name = compares ? policy + " " + CodecsName(codecs) : policy;
        const std::string folder =
            RunFolderName(compares ? policy + "-" + CodecsName(codecs) : policy, rep);
        cluster.run_dir = (fs::path(options.out_dir) / folder).string();
        cluster.trace_dir =
            options.trace_dir.empty() ? "" : (fs::path(options.trace_dir) / folder).string();
        std::string label =
            fmt::format("[{}/{}] {} run {}/{}", done, total, name, rep, experiment.repeat);
        if (options.seed_per_repeat) label += fmt::format(" (seed {})", e.job.seed);
        if (!options.show) spdlog::info("{} ...", label);
        auto show = [&](const Progress& p) {
          if (options.show) options.show(label, p);
        };
        RunResult r = RunCluster(e, policy, codecs, rep, cluster, signal, show);
        if (options.clear) options.clear();
        spdlog::info("{}: {}", label, DescribeOutcome(r, experiment.job.target_accuracy > 0));
        runs.push_back(std::move(r));
      }
    }
  }
  return runs;
}

}  // namespace dmlps::bench
