// dmlps-bench sim: the experiment of `run`, simulated in virtual time with
// the same policy objects, for clusters of any size.
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <functional>
#include <thread>

#include "cmd/dmlps-bench/commands.h"
#include "dmlps/cli/bench_programs.h"

namespace dmlps::bench_cli {
namespace {

// Reads a per-worker list of non-negative numbers; `check` says what is
// wrong with one value, or "" when nothing is.
std::vector<double> PerWorker(cli::FlagReader& flags, const std::string& flag, int64_t workers,
                              const std::function<std::string(double)>& check) {
  Result<std::vector<double>> values = bench::ParsePerWorker(flags.String(flag), workers);
  if (!values.ok()) {
    flags.AddProblem("--" + flag + ": " + values.status().message());
    return {};
  }
  for (double v : *values) {
    if (std::string problem = check(v); !problem.empty()) {
      flags.AddProblem("--" + flag + " " + problem);
      return {};
    }
  }
  return *values;
}

}  // namespace

void AddSimOptions(cxxopts::Options& options) {
  const sim::NetworkModel cluster = sim::kClusterNetwork;
  const sim::NetworkModel loopback = sim::kLoopbackNetwork;
  cli::AddFlags(options, "Simulation",
                {{"link-gbps",
                  fmt::format("Bandwidth of every link, the server's too, Gbit/s, 0 for "
                              "unlimited (default: {}, or {} (loopback) with --shared-cores)",
                              cluster.link_gbps, loopback.link_gbps),
                  "G"},
                 {"latency-us",
                  fmt::format("One-way latency of every message, microseconds (default: {}, "
                              "or {} (loopback) with --shared-cores)",
                              cluster.latency_s * 1e6, loopback.latency_s * 1e6),
                  "L"},
                 {"shared-cores",
                  "Workers and server share C cores and talk over loopback, as a cluster on "
                  "one host does (0: a machine each)",
                  "C", "0"},
                 {"cpu-slice-ms",
                  "With --shared-cores: run each job on a whole core for slices of MS, as the "
                  "kernel's scheduler does, instead of sharing the cores out at once (0)",
                  "MS", "0"},
                 {"cpu-wake-preempts",
                  "With --cpu-slice-ms: a job that starts while every core is taken preempts "
                  "the one furthest into its slice, as the kernel does for a process that "
                  "wakes"},
                 {"cpu-wake-credit-ms",
                  "With --cpu-slice-ms: a job that starts runs its first slice MS longer, as the "
                  "kernel's fair scheduler credits a process that slept (0)",
                  "MS", "0"},
                 {"jitter",
                  "Transient noise: each step's compute times a lognormal factor of median 1 and "
                  "log-sd SIGMA, per worker or one for all",
                  "SIGMA,...", "0"},
                 {"heavy-tail",
                  "Heavy-tailed noise: each step's compute times a Pareto factor >= 1 of tail "
                  "index ALPHA > 1, per worker or one for all (0: none)",
                  "ALPHA,...", "0"},
                 {"sim-threads",
                  "Threads of this machine computing the simulated gradients; results are the "
                  "same with any number (default: this machine's cores, at most 16)",
                  "N"},
                 {"compute-cost",
                  "A step of b samples computes A + C*b microseconds (default: timed on this "
                  "machine at start)",
                  "A,C"}});
}

cli::Program ReadSimFlags(cli::FlagReader& flags) {
  bench::Experiment experiment = ReadExperiment(flags);
  const bench::Format format = ReadFormat(flags);
  const int64_t n = std::max<int64_t>(experiment.job.workers, 1);
  if (experiment.job.model == "external") {
    flags.AddProblem(
        "--model external: the simulator needs a model it knows (run takes one with "
        "--worker-command)");
  }

  sim::SimOptions options;
  options.shared_cores = flags.Int("shared-cores", 0, 4096);
  if (flags.Has("cpu-slice-ms")) {
    options.cpu_slice_s = flags.Real("cpu-slice-ms", 0, 1e6) * 1e-3;
    if (options.cpu_slice_s > 0 && options.shared_cores == 0) {
      flags.AddProblem("--cpu-slice-ms: needs --shared-cores");
    }
  }
  options.cpu_wake_preempts = flags.Has("cpu-wake-preempts");
  if (options.cpu_wake_preempts && !(options.cpu_slice_s > 0)) {
    flags.AddProblem("--cpu-wake-preempts: needs --cpu-slice-ms");
  }
  if (flags.Has("cpu-wake-credit-ms")) {
    options.cpu_wake_credit_s = flags.Real("cpu-wake-credit-ms", 0, 1e6) * 1e-3;
    if (options.cpu_wake_credit_s > 0 && !(options.cpu_slice_s > 0)) {
      flags.AddProblem("--cpu-wake-credit-ms: needs --cpu-slice-ms");
    }
  }
  // --shards is transport's flag too (a list there): here one count.
  options.shards = flags.Has("shards") ? flags.Int("shards", 1, 1024) : 1;
  options.threads = flags.Has("sim-threads")
                        ? flags.Int("sim-threads", 1, 256)
                        : std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, 16);
  options.network = options.shared_cores > 0 ? sim::kLoopbackNetwork : sim::kClusterNetwork;
  if (flags.Has("link-gbps")) options.network.link_gbps = flags.Real("link-gbps", 0, 1e6);
  if (flags.Has("latency-us")) options.network.latency_s = flags.Real("latency-us", 0, 1e9) * 1e-6;
  const std::vector<double> jitter = PerWorker(
      flags, "jitter", n, [](double v) { return v >= 0 && v <= 10 ? "" : "must be in [0, 10]"; });
  const std::vector<double> heavy_tail = PerWorker(flags, "heavy-tail", n, [](double v) {
    return v == 0 || (v > 1 && v <= 1e6) ? "" : "must be 0 (none) or above 1";
  });
  if (jitter.size() == static_cast<size_t>(n) && heavy_tail.size() == static_cast<size_t>(n)) {
    const bool any =
        std::any_of(jitter.begin(), jitter.end(), [](double v) { return v > 0; }) ||
        std::any_of(heavy_tail.begin(), heavy_tail.end(), [](double v) { return v > 0; });
    if (any) {
      for (int64_t r = 0; r < n; ++r) {
        options.noise.push_back(
            {jitter[static_cast<size_t>(r)], heavy_tail[static_cast<size_t>(r)]});
      }
    }
  }
  if (flags.Has("compute-cost")) {
    Result<std::vector<double>> ac = bench::ParsePerWorker(flags.String("compute-cost"), 2);
    if (!ac.ok() || (*ac)[0] < 0 || (*ac)[1] < 0 || (*ac)[0] + (*ac)[1] <= 0 ||
        flags.String("compute-cost").find(',') == std::string::npos) {
      flags.AddProblem(
          "--compute-cost must be A,C: two numbers of microseconds, at least 0 and "
          "not both 0");
    } else {
      options.cost = sim::CostModel::Linear((*ac)[0] * 1e-6, (*ac)[1] * 1e-6);
    }
  }
  return [experiment, options, format] {
    return cli::RunBenchSimProgram(experiment, options, format);
  };
}

}  // namespace dmlps::bench_cli
