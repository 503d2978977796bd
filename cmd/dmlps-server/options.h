// dmlps-server's flags: their declaration and their reading into a
// ServerConfig.
#ifndef DMLPS_CMD_SERVER_OPTIONS_H_
#define DMLPS_CMD_SERVER_OPTIONS_H_

#include "dmlps/cli/cli.h"
#include "dmlps/cli/cxxopts.h"
#include "dmlps/launch/launch.h"

namespace dmlps::server_cli {

// Declares every flag; under a launcher, --workers and the addresses
// default to what `launch` says.
void AddServerOptions(cxxopts::Options& options, const launch::LaunchDefaults& launch);

// Reads the flags into a config, checked whole: every problem (the
// launcher's too) collects in `flags`, in the order of the flags. Returns
// the program that serves under that config.
cli::Program ReadServerFlags(cli::FlagReader& flags, const launch::LaunchDefaults& launch);

}  // namespace dmlps::server_cli

#endif  // DMLPS_CMD_SERVER_OPTIONS_H_
