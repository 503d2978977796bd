// dmlps-trace: reads the traces dmlps binaries write (--trace FILE) and
// summarises, merges or converts them; one subcommand per job.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "dmlps/cli/cli.h"
#include "dmlps/trace/tools.h"
#include "dmlps/trace/trace.h"

namespace {

constexpr std::string_view kProgram = "dmlps-trace";

struct Settings {
  dmlps::trace::SummaryFormat format = dmlps::trace::SummaryFormat::kText;
  dmlps::trace::PlotOptions plot;
};

using Records = std::vector<dmlps::trace::Record>;

dmlps::Status RunSummary(Records records, const Settings& settings) {
  dmlps::trace::WriteSummary(dmlps::trace::Summarize(records), settings.format, std::cout);
  return dmlps::Status::Ok();
}

dmlps::Status RunMerge(Records records, const Settings&) {
  return dmlps::trace::WriteMerged(std::move(records), std::cout);
}

dmlps::Status RunChrome(Records records, const Settings&) {
  dmlps::trace::WriteChrome(records, std::cout);
  return dmlps::Status::Ok();
}

dmlps::Status RunTsv(Records records, const Settings&) {
  dmlps::trace::SortByTime(&records);
  dmlps::trace::WriteTsv(records, std::cout);
  return dmlps::Status::Ok();
}

dmlps::Status RunPlot(Records records, const Settings& settings) {
  return dmlps::trace::WritePlot(records, settings.plot, std::cout);
}

struct Subcommand {
  const char* name;
  const char* help;
  dmlps::Status (*function)(Records, const Settings&);
};

constexpr Subcommand kSubcommands[] = {
    {"summary", "per-worker time shares, time to accuracy and stragglers", RunSummary},
    {"merge", "one trace of all the records, sorted by time (binary, to stdout)", RunMerge},
    {"chrome", "Chrome Trace Event JSON for ui.perfetto.dev", RunChrome},
    {"tsv", "one line per record, tab-separated", RunTsv},
    {"plot", "a gnuplot script with the data inline (--kind, --term)", RunPlot},
};

std::string Description() {
  std::string text =
      "Reads dmlps traces (FILE..., none or '-' for standard input) and summarises,\n"
      "merges or converts them.\n\nSubcommands:\n";
  for (const Subcommand& s : kSubcommands) {
    text += "  " + std::string(s.name) + std::string(10 - std::string_view(s.name).size(), ' ') +
            s.help + "\n";
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  cxxopts::Options options(std::string(kProgram), Description());
  options.positional_help("SUBCOMMAND [FILE...]");
  options.add_options("Summary")
      ("format", "Summary output: text, tsv or json",
       cxxopts::value<std::string>()->default_value("text"), "FORMAT");
  options.add_options("Plot")
      ("kind", "What to plot: tta, gantt, batch or wait",
       cxxopts::value<std::string>()->default_value("tta"), "KIND")
      ("term", "gnuplot terminal: svg, png or dumb",
       cxxopts::value<std::string>()->default_value("svg"), "TERM")
      ("window", "gantt: plot the first SECONDS of the workers' time",
       cxxopts::value<std::string>()->default_value("20"), "SECONDS");
  options.add_options("Positional")
      ("subcommand", "", cxxopts::value<std::string>())
      ("files", "", cxxopts::value<std::vector<std::string>>());
  options.parse_positional({"subcommand", "files"});
  dmlps::cli::AddCommonOptions(options);

  int exit_code = 0;
  std::optional<cxxopts::ParseResult> parsed =
      dmlps::cli::ParseArgs(options, {"Summary", "Plot", "Common"}, argc, argv, &exit_code);
  if (!parsed) return exit_code;
  dmlps::cli::FlagReader flags(*parsed);

  const Subcommand* subcommand = nullptr;
  if (!flags.Has("subcommand")) {
    flags.AddProblem("no subcommand (summary, merge, chrome, tsv or plot)");
  } else {
    const std::string name = flags.String("subcommand");
    for (const Subcommand& s : kSubcommands) {
      if (name == s.name) subcommand = &s;
    }
    if (subcommand == nullptr) {
      flags.AddProblem("unknown subcommand '" + name + "' (summary, merge, chrome, tsv or plot)");
    }
  }
  Settings settings;
  auto format = dmlps::trace::ParseSummaryFormat(flags.String("format"));
  if (format.ok()) {
    settings.format = *format;
  } else {
    flags.AddProblem("--format: " + format.status().message());
  }
  settings.plot.kind = flags.String("kind");
  settings.plot.term = flags.String("term");
  settings.plot.window_s = flags.Real("window", 1e-6, 1e9);
  if (dmlps::Status s = dmlps::trace::ValidatePlotOptions(settings.plot); !s.ok()) {
    flags.AddProblems({s.message()});
  }
  const bool is_plot = subcommand != nullptr && std::string_view(subcommand->name) == "plot";
  const bool is_summary = subcommand != nullptr && std::string_view(subcommand->name) == "summary";
  if (subcommand != nullptr) {
    for (const char* flag : {"kind", "term", "window"}) {
      if (!is_plot && parsed->count(flag)) {
        flags.AddProblem(std::string("--") + flag + ": applies only to plot");
      }
    }
    if (!is_summary && parsed->count("format")) {
      flags.AddProblem("--format: applies only to summary");
    }
  }
  if (!flags.problems().empty()) return dmlps::cli::ReportUsageErrors(kProgram, flags.problems());
  dmlps::cli::SetupLogging(kProgram, *parsed);

  std::vector<std::string> files;
  if (flags.Has("files")) files = (*parsed)["files"].as<std::vector<std::string>>();
  if (files.empty()) files.push_back("-");

  // Read everything first: a missing file ends the run before any output;
  // a damaged one gives what it held, a warning, and exit 65 at the end.
  dmlps::trace::ReadResult read = dmlps::trace::ReadTraces(files, [](const dmlps::Status& why) {
    std::fprintf(stderr, "%s: warning: %s\n", kProgram.data(), why.message().c_str());
  });
  if (!read.status.ok() && read.status.code() != dmlps::StatusCode::kDataLoss) {
    return dmlps::cli::ReportError(kProgram, read.status);
  }
  const bool damaged = !read.status.ok();
  Records records = std::move(read.records);

  dmlps::Status status = subcommand->function(std::move(records), settings);
  if (!status.ok()) return dmlps::cli::ReportError(kProgram, status);
  std::cout.flush();
  if (!std::cout) {
    return dmlps::cli::ReportError(kProgram,
                                   dmlps::Status::IOError("cannot write to standard output"));
  }
  return damaged ? dmlps::ExitCodeFor(dmlps::Status::DataLoss("")) : 0;
}
