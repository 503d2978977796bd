// dmlps-worker's flags: their declaration, in --help's groups, and their
// reading into a WorkerConfig.
#ifndef DMLPS_CMD_WORKER_OPTIONS_H_
#define DMLPS_CMD_WORKER_OPTIONS_H_

#include <cxxopts.hpp>
#include <string>
#include <vector>

#include "dmlps/cli/cli.h"
#include "dmlps/launch/launch.h"
#include "dmlps/worker/worker.h"

namespace dmlps::worker_cli {

// The option groups, in the order --help shows them.
const std::vector<std::string>& HelpGroups();

// Declares every flag; under a launcher, --server defaults to what `launch`
// says.
void AddWorkerOptions(cxxopts::Options& options, const launch::LaunchDefaults& launch);

// Reads the flags into a config, checked whole: every problem (the
// launcher's too) collects in `flags`, in the order of the flags.
worker::WorkerConfig ReadWorkerConfig(cli::FlagReader& flags, const launch::LaunchDefaults& launch);

}  // namespace dmlps::worker_cli

#endif  // DMLPS_CMD_WORKER_OPTIONS_H_
