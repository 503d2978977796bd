// dmlps-worker's flags: their declaration and their reading into a
// WorkerConfig.
#ifndef DMLPS_CMD_WORKER_OPTIONS_H_
#define DMLPS_CMD_WORKER_OPTIONS_H_

#include "dmlps/cli/cli.h"
#include "dmlps/cli/cxxopts.h"
#include "dmlps/launch/launch.h"

namespace dmlps::worker_cli {

// Declares every flag; under a launcher, --server defaults to what `launch`
// says.
void AddWorkerOptions(cxxopts::Options& options, const launch::LaunchDefaults& launch);

// Reads the flags into a config, checked whole: every problem (the
// launcher's too) collects in `flags`, in the order of the flags. Returns
// the program that trains under that config.
cli::Program ReadWorkerFlags(cli::FlagReader& flags, const launch::LaunchDefaults& launch);

}  // namespace dmlps::worker_cli

#endif  // DMLPS_CMD_WORKER_OPTIONS_H_
