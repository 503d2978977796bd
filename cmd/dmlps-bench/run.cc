// dmlps-bench run: real clusters on this host, one per policy and repeat,
// the policies taking turns.
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cmd/dmlps-bench/commands.h"
#include "dmlps/bench/cluster.h"

namespace dmlps::bench_cli {
namespace {

namespace fs = std::filesystem;

// The folder this program lives in: dmlps-server and dmlps-worker are
// installed (and built) beside it.
std::string OwnFolder() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return ".";
  return fs::path(std::string(path, static_cast<size_t>(n))).parent_path().string();
}

// "ssp:3" -> "ssp-3": a folder name.
std::string Tag(const std::string& policy, int64_t repeat) {
  std::string tag = policy;
  for (char& c : tag) {
    if (c == ':' || c == '/') c = '-';
  }
  return tag + "-" + std::to_string(repeat);
}

std::string Outcome(const bench::RunResult& r, bool has_target) {
  if (!r.failure.empty()) return "FAILED: " + r.failure;
  const char* what = !has_target ? "ran" : r.reached ? "reached the target in" : "missed the target after";
  return fmt::format("{} {:.2f} s, {} iterations, accuracy {:.4f}, compute ratio {:.3f}/{:.3f}",
                     what, r.seconds,
                     r.iterations, r.accuracy, r.compute_ratio_mean, r.compute_ratio_min);
}

}  // namespace

void AddRunOptions(cxxopts::Options& options) {
  options.add_options("Run")
      ("bin", "Folder holding dmlps-server and dmlps-worker (default: this program's folder)",
       cxxopts::value<std::string>(), "DIR")
      ("out", "Keep every run's logs, evaluations and report in DIR/POLICY-REPEAT "
       "(default: a temporary folder, removed unless a run failed)",
       cxxopts::value<std::string>(), "DIR")
      ("trace-dir", "Trace every process: DIR/POLICY-REPEAT/server.trace and worker-R.trace",
       cxxopts::value<std::string>(), "DIR")
      ("threads", "Threads each worker gives its linear algebra",
       cxxopts::value<std::string>()->default_value("1"), "N");
}

int RunCommand(const cxxopts::ParseResult& parsed, cli::FlagReader& flags) {
  bench::Experiment experiment = ReadExperiment(flags);
  const bench::Format format = ReadFormat(flags);
  bench::ClusterOptions options;
  options.bin_dir = flags.Has("bin") ? flags.String("bin") : OwnFolder();
  options.threads = flags.Int("threads", 1, 1024);
  for (const char* binary : {"dmlps-server", "dmlps-worker"}) {
    const fs::path path = fs::path(options.bin_dir) / binary;
    if (access(path.c_str(), X_OK) != 0) {
      flags.AddProblem(std::string(binary) + " not found in " + options.bin_dir +
                       (flags.Has("bin") ? "" : " (give --bin DIR)"));
    }
  }
  if (!flags.problems().empty()) return cli::ReportUsageErrors(kProgram, flags.problems());
  cli::SetupLogging(kProgram, parsed);
  const std::atomic<int>* signal = cli::InstallSignalHandlers();

  const bool keep = flags.Has("out");
  std::string out_dir;
  if (keep) {
    out_dir = flags.String("out");
  } else {
    std::string pattern = (fs::temp_directory_path() / "dmlps-bench.XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      return cli::ReportError(kProgram, Status::IOError("cannot create a temporary folder"));
    }
    out_dir = pattern;
  }
  const std::string trace_root = flags.Has("trace-dir") ? flags.String("trace-dir") : "";

  const std::string title = Describe(experiment);
  spdlog::info("{}; logs in {}", title, out_dir);
  const bool live = isatty(STDERR_FILENO) != 0;
  const int64_t total = experiment.repeat * static_cast<int64_t>(experiment.policies.size());
  int64_t done = 0;
  bool any_failed = false;
  std::vector<bench::RunResult> runs;
  for (int64_t rep = 1; rep <= experiment.repeat && signal->load() == 0; ++rep) {
    for (const std::string& policy : experiment.policies) {
      if (signal->load() != 0) break;
      ++done;
      options.run_dir = (fs::path(out_dir) / Tag(policy, rep)).string();
      options.trace_dir = trace_root.empty() ? "" : (fs::path(trace_root) / Tag(policy, rep)).string();
      const std::string label = fmt::format("[{}/{}] {} run {}/{}", done, total, policy, rep,
                                            experiment.repeat);
      if (!live) spdlog::info("{} ...", label);
      auto show = [&](const bench::Progress& p) {
        if (!live) return;
        std::string line = fmt::format("{}: {:.1f} s", label, p.elapsed_s);
        if (p.accuracy >= 0) {
          line += fmt::format(", training {:.1f} s, iteration {}, accuracy {:.4f}", p.seconds,
                              p.iteration, p.accuracy);
        }
        std::fprintf(stderr, "\r\033[K%s", line.c_str());
        std::fflush(stderr);
      };
      bench::RunResult r = bench::RunCluster(experiment, policy, rep, options, signal, show);
      if (live) std::fprintf(stderr, "\r\033[K");
      spdlog::info("{}: {}", label, Outcome(r, experiment.target > 0));
      any_failed = any_failed || !r.failure.empty();
      runs.push_back(std::move(r));
    }
  }
  if (signal->load() != 0) {
    spdlog::warn("interrupted; logs kept in {}", out_dir);
    return cli::ExitCodeForSignal(signal->load());
  }
  bench::WriteRows(bench::Tabulate(runs, experiment.policies), runs, title, format, std::cout);
  std::cout.flush();
  if (!keep && !any_failed) {
    std::error_code ec;
    fs::remove_all(out_dir, ec);
  } else if (any_failed) {
    spdlog::warn("some runs failed; their logs are in {}", out_dir);
  }
  if (!std::cout) return cli::ReportError(kProgram, Status::IOError("cannot write to standard output"));
  return any_failed ? cli::kExitRunFailed : 0;
}

}  // namespace dmlps::bench_cli
