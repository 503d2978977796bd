// dmlps-bench run: real clusters on this host, one per policy and repeat,
// the policies taking turns.
#include <unistd.h>

#include <filesystem>

#include "cmd/dmlps-bench/commands.h"
#include "dmlps/cli/bench_programs.h"

namespace dmlps::bench_cli {

void AddRunOptions(cxxopts::Options& options) {
  cli::AddFlags(
      options, "Run",
      {{"bin", "Folder holding dmlps-server and dmlps-worker (default: this program's folder)",
        "DIR"},
       {"out",
        "Keep every run's logs, evaluations and report in DIR/POLICY-REPEAT (default: a "
        "temporary folder, named in the log and removed at the end unless a run failed)",
        "DIR"},
       {"trace-dir", "Trace every process: DIR/POLICY-REPEAT/server.trace and worker-R.trace",
        "DIR"},
       {"threads", "Threads each worker gives its linear algebra", "N", "1"}});
}

cli::Program ReadRunFlags(cli::FlagReader& flags) {
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
  if (flags.Has("out")) options.out_dir = flags.String("out");
  if (flags.Has("trace-dir")) options.trace_dir = flags.String("trace-dir");
  return [experiment, options, format] {
    return cli::RunBenchRunProgram(experiment, options, format);
  };
}

}  // namespace dmlps::bench_cli
