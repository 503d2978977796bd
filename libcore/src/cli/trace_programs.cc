#include "dmlps/cli/trace_programs.h"

#include <cstdio>
#include <functional>
#include <iostream>

#include "dmlps/cli/cli.h"

namespace dmlps::cli {
namespace {

// Reads every trace in `files` ("-" when none), then hands the records to
// `use`, which writes to stdout; the exit code of it all.
int WithTraces(std::string_view program, std::vector<std::string> files,
               const std::function<Status(std::vector<trace::Record>)>& use) {
  if (files.empty()) files.push_back("-");
  trace::ReadResult read = trace::ReadTraces(files, [program](const Status& why) {
    std::fprintf(stderr, "%.*s: warning: %s\n", static_cast<int>(program.size()), program.data(),
                 why.message().c_str());
  });
  if (!read.status.ok() && read.status.code() != StatusCode::kDataLoss) {
    return ReportError(program, read.status);
  }
  const bool damaged = !read.status.ok();
  if (Status status = use(std::move(read.records)); !status.ok()) {
    return ReportError(program, status);
  }
  std::cout.flush();
  if (!std::cout) return ReportError(program, Status::IOError("cannot write to standard output"));
  return damaged ? ExitCodeFor(Status::DataLoss("")) : 0;
}

}  // namespace

Status TraceSummary(std::vector<trace::Record> records, const TraceSettings& settings,
                    std::ostream& out) {
  trace::WriteSummary(trace::Summarize(records), settings.format, out);
  return Status::Ok();
}

Status TraceMerge(std::vector<trace::Record> records, const TraceSettings&, std::ostream& out) {
  return trace::WriteMerged(std::move(records), out);
}

Status TraceChrome(std::vector<trace::Record> records, const TraceSettings&, std::ostream& out) {
  trace::WriteChrome(records, out);
  return Status::Ok();
}

Status TraceTsv(std::vector<trace::Record> records, const TraceSettings&, std::ostream& out) {
  trace::SortByTime(&records);
  trace::WriteTsv(records, out);
  return Status::Ok();
}

Status TracePlot(std::vector<trace::Record> records, const TraceSettings& settings,
                 std::ostream& out) {
  return trace::WritePlot(records, settings.plot, out);
}

int RunTraceProgram(TraceCommand command, const std::vector<std::string>& files,
                    const TraceSettings& settings) {
  return WithTraces(kTraceProgram, files, [&](std::vector<trace::Record> records) {
    return command(std::move(records), settings, std::cout);
  });
}

int RunPredictProgram(const std::vector<std::string>& files, const predict::ReplayOptions& options,
                      predict::ReportFormat format) {
  return WithTraces(kPredictProgram, files, [&](std::vector<trace::Record> records) {
    Result<predict::ReplayReport> report = predict::ReplayTraces(records, options);
    if (!report.ok()) return report.status();
    predict::WriteReplayReport(*report, format, std::cout);
    return Status::Ok();
  });
}

}  // namespace dmlps::cli
