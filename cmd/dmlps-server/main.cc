// dmlps-server: holds the model and runs a synchronization policy for a
// cluster of dmlps-worker processes.
#include "cmd/dmlps-server/options.h"
#include "dmlps/cli/programs.h"

int main(int argc, char** argv) {
  namespace cli = dmlps::cli;
  // Under mpirun, srun or a PMI launcher, rank 0 serves the other SIZE-1.
  const dmlps::launch::LaunchDefaults launch = dmlps::launch::ReadLaunchDefaults();
  cxxopts::Options options(std::string(cli::kServerProgram),
                           "Parameter server: holds the model, runs a synchronization policy\n"
                           "over its workers, evaluates on the test set. One TSV line per\n"
                           "evaluation on stdout (seconds, iteration, accuracy, loss).\n");
  dmlps::server_cli::AddServerOptions(options, launch);

  int exit_code = 0;
  std::optional<cxxopts::ParseResult> parsed =
      cli::ParseArgs(options, dmlps::server_cli::HelpGroups(), argc, argv, &exit_code);
  if (!parsed) return exit_code;
  cli::FlagReader flags(*parsed);
  const dmlps::server::ServerConfig config = dmlps::server_cli::ReadServerConfig(flags, launch);
  if (!flags.problems().empty()) return cli::ReportUsageErrors(cli::kServerProgram, flags.problems());

  cli::SetupLogging(cli::kServerProgram, *parsed);
  return cli::RunServerProgram(config, launch.launcher);
}
