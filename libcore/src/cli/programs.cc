#include "dmlps/cli/programs.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <iostream>
#include <sstream>

#include "dmlps/base/file.h"
#include "dmlps/cli/cli.h"
#include "dmlps/net/curve.h"

namespace dmlps::cli {

Status WriteRunReportFile(const server::RunReport& report, const std::string& path) {
  std::ostringstream text;
  server::WriteRunReport(report, text);
  if (!WriteFileAtomically(path, text.str()).ok()) return Status::IOError("cannot write " + path);
  return Status::Ok();
}

namespace {

// Says which launcher started this process, if one did, and takes over
// SIGINT and SIGTERM: what a server and a worker do first.
const std::atomic<int>* StartUnderLauncher(const launch::Launcher& launcher) {
  if (!launcher.name.empty()) spdlog::info("{}", launch::Describe(launcher));
  return InstallSignalHandlers();
}

}  // namespace

int RunServerProgram(const server::ServerConfig& config, const launch::Launcher& launcher) {
  const std::atomic<int>* signal = StartUnderLauncher(launcher);
  // With the trace on standard output, the evaluations are in it, not in a TSV.
  std::ostringstream no_tsv;
  std::ostream& tsv = config.trace == "-" ? static_cast<std::ostream&>(no_tsv) : std::cout;
  Result<server::RunReport> report = server::RunServer(config, tsv, signal);
  if (!report.ok()) return ReportError(kServerProgram, report.status());
  if (!config.report.empty()) {
    if (Status written = WriteRunReportFile(*report, config.report); !written.ok()) {
      return ReportError(kServerProgram, written);
    }
  }
  if (report->signal != 0) return ExitCodeForSignal(report->signal);
  if (config.target_accuracy > 0 && !report->target_reached) return kExitRunFailed;
  return 0;
}

int RunWorkerProgram(const worker::WorkerConfig& config, const launch::Launcher& launcher) {
  const std::atomic<int>* signal = StartUnderLauncher(launcher);
  Result<worker::WorkerReport> report = worker::RunWorker(config, signal);
  if (!report.ok()) return ReportError(kWorkerProgram, report.status());
  if (report->signal != 0) return ExitCodeForSignal(report->signal);
  return 0;
}

int RunKeygenProgram(const std::vector<std::string>& names, bool force) {
  if (Status curve = net::RequireCurve(); !curve.ok()) return ReportError(kKeygenProgram, curve);
  // Every refusal at once, and nothing written unless every pair can be.
  const std::vector<Status> refused = net::CheckKeyPairTargets(names, force);
  int exit_code = 0;
  for (const Status& problem : refused) exit_code = ReportError(kKeygenProgram, problem);
  if (exit_code != 0) return exit_code;
  for (const std::string& name : names) {
    Result<net::CurveKeyPair> pair = net::GenerateKeyPair();
    if (!pair.ok()) return ReportError(kKeygenProgram, pair.status());
    if (Status written = net::WriteKeyPair(*pair, name, force); !written.ok()) {
      return ReportError(kKeygenProgram, written);
    }
    spdlog::info("wrote {0}.key and {0}.pub", name);
    std::printf("%s\n", pair->public_key.c_str());
  }
  return 0;
}

}  // namespace dmlps::cli
