// dmlps-worker: joins a dmlps-server, trains on its shard of the data and
// pushes gradients until the server says stop.
#include "cmd/dmlps-worker/options.h"
#include "dmlps/cli/programs.h"

int main(int argc, char** argv) {
  namespace cli = dmlps::cli;
  // Under mpirun, srun or a PMI launcher, rank 0 is the server; ranks 1.. are workers 0..
  const dmlps::launch::LaunchDefaults launch = dmlps::launch::ReadLaunchDefaults();
  cxxopts::Options options(std::string(cli::kWorkerProgram),
                           "Training worker: joins a dmlps-server, which sends it the model,\n"
                           "its rank, shard and batch size; trains until told to stop.\n");
  dmlps::worker_cli::AddWorkerOptions(options, launch);

  int exit_code = 0;
  std::optional<cxxopts::ParseResult> parsed =
      cli::ParseArgs(options, dmlps::worker_cli::HelpGroups(), argc, argv, &exit_code);
  if (!parsed) return exit_code;
  cli::FlagReader flags(*parsed);
  const dmlps::worker::WorkerConfig config = dmlps::worker_cli::ReadWorkerConfig(flags, launch);
  if (!flags.problems().empty()) return cli::ReportUsageErrors(cli::kWorkerProgram, flags.problems());

  cli::SetupLogging(cli::kWorkerProgram, *parsed);
  return cli::RunWorkerProgram(config, launch.launcher);
}
