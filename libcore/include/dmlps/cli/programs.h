// What dmlps-server, dmlps-worker and dmlps-keygen do once their flags are
// read and checked: one function each, which runs the program, reports on
// stderr and returns its exit code (see cli.h), so that main() only parses.
#ifndef DMLPS_CLI_PROGRAMS_H_
#define DMLPS_CLI_PROGRAMS_H_

#include <string>
#include <string_view>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/cli/cli.h"
#include "dmlps/cli/cxxopts.h"
#include "dmlps/launch/launch.h"
#include "dmlps/server/server.h"
#include "dmlps/worker/worker.h"

namespace dmlps::cli {

inline constexpr std::string_view kServerProgram = "dmlps-server";
inline constexpr std::string_view kWorkerProgram = "dmlps-worker";
inline constexpr std::string_view kKeygenProgram = "dmlps-keygen";

// The main() of a program that a launcher may start (mpirun, srun,
// torchrun, PMI, an indexed Job): dmlps-server and dmlps-worker, whose
// flags default to what the launch says.
struct LaunchedMain {
  std::string_view program;
  const char* description;               // what --help says first
  std::vector<std::string> help_groups;  // in --help's order
  // Declares every flag, under the launch's defaults.
  void (*add_options)(cxxopts::Options& options, const launch::LaunchDefaults& launch);
  // Reads them, problems into `flags` (the launch's too), as RunMain's read.
  Program (*read_flags)(FlagReader& flags, const launch::LaunchDefaults& launch);
};
// Reads the launch (launch::ReadLaunchDefaults), then runs as RunMain.
int RunLaunchedMain(const LaunchedMain& program, int argc, char** argv);

// Writes the report as server::WriteRunReport does, whole under a temporary
// name first, so that a reader never sees half a report. IOError when it
// cannot.
Status WriteRunReportFile(const server::RunReport& report, const std::string& path);

// Serves until the run ends or a signal stops it: the evaluations as TSV on
// stdout (none when the trace goes there), the report to config.report.
// Exit: 0; 1 when a target was set and missed; 128+N on signal N; else the
// code of the error. REQUIRES: config checked by server::ValidateConfig,
// logging set up.
int RunServerProgram(server::ServerConfig config, const launch::Launcher& launcher);

// Trains until the server says stop or a signal stops it. Exit: 0; 128+N
// on signal N; else the code of the error (69 when no server answers).
// REQUIRES: config checked by worker::ValidateConfig, logging set up.
int RunWorkerProgram(const worker::WorkerConfig& config, const launch::Launcher& launcher);
// dmlps-worker --evaluator: joins config.server as its evaluator and scores
// each snapshot with config.model on the test set of config.data.
int RunEvaluatorProgram(const worker::WorkerConfig& config);

// dmlps-keygen --secret FILE: writes a fresh job secret (net/secret.h) to
// FILE, mode 0600; the exit code.
int RunSecretProgram(const std::string& path, bool force);

// Makes a CURVE key pair for each name, NAME.key and NAME.pub (replacing
// files that exist only when `force`), and prints each public key on
// stdout. Stops at the first pair it cannot make or write.
int RunKeygenProgram(const std::vector<std::string>& names, bool force);

}  // namespace dmlps::cli

#endif  // DMLPS_CLI_PROGRAMS_H_
