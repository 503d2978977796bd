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
  auto read_flags = [&launch](cli::FlagReader& flags) {
    return dmlps::server_cli::ReadServerFlags(flags, launch);
  };
  const std::vector<std::string> help_groups = {"Cluster",
                                                "Fault tolerance",
                                                "Policy",
                                                "Training",
                                                "Optimizer",
                                                "Stopping and evaluation",
                                                "Security and limits",
                                                "Common"};
  return cli::RunMain(options, help_groups, argc, argv, read_flags);
}
