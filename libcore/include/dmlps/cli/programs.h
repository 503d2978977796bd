// What dmlps-server, dmlps-worker and dmlps-keygen do once their flags are
// read and checked: one function each, which runs the program, reports on
// stderr and returns its exit code (see cli.h), so that main() only parses.
#ifndef DMLPS_CLI_PROGRAMS_H_
#define DMLPS_CLI_PROGRAMS_H_

#include <string>
#include <string_view>

#include "dmlps/base/status.h"
#include "dmlps/launch/launch.h"
#include "dmlps/server/server.h"

namespace dmlps::cli {

inline constexpr std::string_view kServerProgram = "dmlps-server";

// Writes the report as server::WriteRunReport does, whole under a temporary
// name first, so that a reader never sees half a report. IOError when it
// cannot.
Status WriteRunReportFile(const server::RunReport& report, const std::string& path);

// Serves until the run ends or a signal stops it: the evaluations as TSV on
// stdout (none when the trace goes there), the report to config.report.
// Exit: 0; 1 when a target was set and missed; 128+N on signal N; else the
// code of the error. REQUIRES: config checked by server::ValidateConfig,
// logging set up.
int RunServerProgram(const server::ServerConfig& config, const launch::Launcher& launcher);

}  // namespace dmlps::cli

#endif  // DMLPS_CLI_PROGRAMS_H_
