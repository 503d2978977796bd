// dmlps-server's flags: their declaration, in --help's groups, and their
// reading into a ServerConfig.
#ifndef DMLPS_CMD_SERVER_OPTIONS_H_
#define DMLPS_CMD_SERVER_OPTIONS_H_

#include <cxxopts.hpp>
#include <string>
#include <vector>

#include "dmlps/cli/cli.h"
#include "dmlps/launch/launch.h"
#include "dmlps/server/server.h"

namespace dmlps::server_cli {

// The option groups, in the order --help shows them.
const std::vector<std::string>& HelpGroups();

// Declares every flag; under a launcher, --workers and the addresses
// default to what `launch` says.
void AddServerOptions(cxxopts::Options& options, const launch::LaunchDefaults& launch);

// Reads the flags into a config, checked whole: every problem (the
// launcher's too) collects in `flags`, in the order of the flags.
server::ServerConfig ReadServerConfig(cli::FlagReader& flags, const launch::LaunchDefaults& launch);

}  // namespace dmlps::server_cli

#endif  // DMLPS_CMD_SERVER_OPTIONS_H_
