// dmlps-bench run: real clusters on this host, one per policy and repeat,
// the policies taking turns.
#include <unistd.h>

#include <filesystem>

#include "cmd/dmlps-bench/commands.h"
#include "dmlps/cli/bench_programs.h"

namespace dmlps::bench_cli {

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
  const bench::Experiment experiment = ReadExperiment(flags);
  const bench::Format format = ReadFormat(flags);
  bench::ExperimentOptions options;
  options.cluster.bin_dir = flags.Has("bin") ? flags.String("bin") : cli::ProgramFolder();
  options.cluster.threads = flags.Int("threads", 1, 1024);
  for (const char* binary : {"dmlps-server", "dmlps-worker"}) {
    const std::filesystem::path path = std::filesystem::path(options.cluster.bin_dir) / binary;
    if (access(path.c_str(), X_OK) != 0) {
      flags.AddProblem(std::string(binary) + " not found in " + options.cluster.bin_dir +
                       (flags.Has("bin") ? "" : " (give --bin DIR)"));
    }
  }
  if (!flags.problems().empty()) return cli::ReportUsageErrors(kProgram, flags.problems());
  cli::SetupLogging(kProgram, parsed);
  if (flags.Has("out")) options.out_dir = flags.String("out");
  if (flags.Has("trace-dir")) options.trace_dir = flags.String("trace-dir");
  return cli::RunBenchRunProgram(experiment, options, format);
}

}  // namespace dmlps::bench_cli
