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
  auto read_flags = [&launch](cli::FlagReader& flags) {
    return dmlps::worker_cli::ReadWorkerFlags(flags, launch);
  };
  return cli::RunMain(options, {"Cluster", "Training", "Straggler emulation", "Common"}, argc, argv,
                      read_flags);
}
