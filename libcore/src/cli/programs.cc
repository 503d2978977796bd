#include "dmlps/cli/programs.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "dmlps/cli/cli.h"

namespace dmlps::cli {

Status WriteRunReportFile(const server::RunReport& report, const std::string& path) {
  const std::string tmp = path + ".tmp";
  std::ofstream out(tmp);
  server::WriteRunReport(report, out);
  out.close();
  if (!out || std::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::IOError("cannot write " + path);
  }
  return Status::Ok();
}

int RunServerProgram(const server::ServerConfig& config, const launch::Launcher& launcher) {
  if (!launcher.name.empty()) spdlog::info("{}", launch::Describe(launcher));
  const std::atomic<int>* signal = InstallSignalHandlers();
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

}  // namespace dmlps::cli
