// What dmlps-trace and dmlps-predict do once their flags are read and
// checked: read every trace named first (a missing file ends the run before
// any output; a damaged one gives what it held, a warning and exit 65 at
// the end), then write what was asked for to stdout and return the exit
// code (see cli.h). REQUIRES of each: logging set up.
#ifndef DMLPS_CLI_TRACE_PROGRAMS_H_
#define DMLPS_CLI_TRACE_PROGRAMS_H_

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/predict/replay.h"
#include "dmlps/trace/tools.h"
#include "dmlps/trace/trace.h"

namespace dmlps::cli {

inline constexpr std::string_view kTraceProgram = "dmlps-trace";
inline constexpr std::string_view kPredictProgram = "dmlps-predict";

// What dmlps-trace's flags set, for the subcommands that read them.
struct TraceSettings {
  trace::SummaryFormat format = trace::SummaryFormat::kText;  // summary
  trace::PlotOptions plot;                                    // plot
};

// A dmlps-trace subcommand: writes what it makes of `records` to `out`.
using TraceCommand = Status (*)(std::vector<trace::Record> records, const TraceSettings& settings,
                                std::ostream& out);
// summary: per-worker time shares, time to accuracy and stragglers.
Status TraceSummary(std::vector<trace::Record> records, const TraceSettings& settings,
                    std::ostream& out);
// merge: one binary trace of all the records, sorted by time.
Status TraceMerge(std::vector<trace::Record> records, const TraceSettings& settings,
                  std::ostream& out);
// chrome: Chrome Trace Event JSON.
Status TraceChrome(std::vector<trace::Record> records, const TraceSettings& settings,
                   std::ostream& out);
// tsv: one line per record, sorted by time.
Status TraceTsv(std::vector<trace::Record> records, const TraceSettings& settings,
                std::ostream& out);
// plot: a gnuplot script of settings.plot.
Status TracePlot(std::vector<trace::Record> records, const TraceSettings& settings,
                 std::ostream& out);

// dmlps-trace: `command` on the records of `files` (none: standard input).
int RunTraceProgram(TraceCommand command, const std::vector<std::string>& files,
                    const TraceSettings& settings);

// dmlps-predict: the workers' speeds in `files` (none: standard input)
// replayed through the predictors, the report in `format`.
int RunPredictProgram(const std::vector<std::string>& files, const predict::ReplayOptions& options,
                      predict::ReportFormat format);

}  // namespace dmlps::cli

#endif  // DMLPS_CLI_TRACE_PROGRAMS_H_
