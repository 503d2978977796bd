// dmlps-trace's flags: their declaration and their reading into the
// settings of the subcommands.
#ifndef DMLPS_CMD_TRACE_OPTIONS_H_
#define DMLPS_CMD_TRACE_OPTIONS_H_

#include <string_view>

#include "dmlps/cli/cli.h"
#include "dmlps/cli/cxxopts.h"
#include "dmlps/cli/trace_programs.h"

namespace dmlps::trace_cli {

// Declares the Summary and Plot flags, the positional SUBCOMMAND and
// FILE..., and the Common flags.
void AddTraceOptions(cxxopts::Options& options);

// Reads the settings; a flag given for another subcommand than
// `subcommand` (empty: none known) is a problem, collected in `flags` with
// the others.
cli::TraceSettings ReadTraceSettings(cli::FlagReader& flags, std::string_view subcommand);

}  // namespace dmlps::trace_cli

#endif  // DMLPS_CMD_TRACE_OPTIONS_H_
