#include "cmd/dmlps-trace/options.h"

#include <string>
#include <vector>

namespace dmlps::trace_cli {

void AddTraceOptions(cxxopts::Options& options) {
  cli::AddFlags(options, "Summary",
                {{"format", "Summary output: text, tsv or json", "FORMAT", "text"}});
  cli::AddFlags(
      options, "Plot",
      {{"kind", "What to plot: tta, gantt, batch or wait", "KIND", "tta"},
       {"term", "gnuplot terminal: svg, png or dumb", "TERM", "svg"},
       {"window", "gantt: plot the first SECONDS of the workers' time", "SECONDS", "20"}});
  options.add_options("Positional")("subcommand", "", cxxopts::value<std::string>())(
      "files", "", cxxopts::value<std::vector<std::string>>());
  options.parse_positional({"subcommand", "files"});
  cli::AddCommonOptions(options);
}

cli::TraceSettings ReadTraceSettings(cli::FlagReader& flags, std::string_view subcommand) {
  cli::TraceSettings settings;
  if (auto format = trace::ParseSummaryFormat(flags.String("format")); format.ok()) {
    settings.format = *format;
  } else {
    flags.AddProblem("--format: " + format.status().message());
  }
  settings.plot.kind = flags.String("kind");
  settings.plot.term = flags.String("term");
  settings.plot.window_s = flags.Real("window", 1e-6, 1e9);
  if (Status s = trace::ValidatePlotOptions(settings.plot); !s.ok())
    flags.AddProblems({s.message()});
  if (!subcommand.empty()) {
    for (const char* flag : {"kind", "term", "window"}) {
      if (subcommand != "plot" && flags.Has(flag)) {
        flags.AddProblem(std::string("--") + flag + ": applies only to plot");
      }
    }
    if (subcommand != "summary" && flags.Has("format")) {
      flags.AddProblem("--format: applies only to summary");
    }
  }
  return settings;
}

}  // namespace dmlps::trace_cli
