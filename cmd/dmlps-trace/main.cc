// dmlps-trace: reads the traces dmlps binaries write (--trace FILE) and
// summarises, merges or converts them; one subcommand per job.
#include <string>

#include "cmd/dmlps-trace/options.h"
#include "dmlps/cli/subcommands.h"
#include "dmlps/cli/trace_programs.h"

namespace {

namespace cli = dmlps::cli;

struct Subcommand {
  const char* name;
  const char* help;
  cli::TraceCommand function;
};

constexpr Subcommand kSubcommands[] = {
    {"summary", "per-worker time shares, time to accuracy and stragglers", cli::TraceSummary},
    {"merge", "one trace of all the records, sorted by time (binary, to stdout)", cli::TraceMerge},
    {"chrome", "Chrome Trace Event JSON for ui.perfetto.dev", cli::TraceChrome},
    {"tsv", "one line per record, tab-separated", cli::TraceTsv},
    {"plot", "a gnuplot script with the data inline (--kind, --term)", cli::TracePlot},
};

}  // namespace

int main(int argc, char** argv) {
  cxxopts::Options options(
      std::string(cli::kTraceProgram),
      cli::DescribeSubcommands("Reads dmlps traces (FILE..., none or '-' for standard input) and "
                               "summarises,\nmerges or converts them.\n\n",
                               kSubcommands, 10));
  options.positional_help("SUBCOMMAND [FILE...]");
  dmlps::trace_cli::AddTraceOptions(options);

  auto read_flags = [](cli::FlagReader& flags) -> cli::Program {
    const Subcommand* subcommand =
        cli::FindSubcommand(flags, kSubcommands, cli::SubcommandNames(kSubcommands, " or "));
    const cli::TraceSettings settings =
        dmlps::trace_cli::ReadTraceSettings(flags, subcommand != nullptr ? subcommand->name : "");
    if (subcommand == nullptr) return nullptr;  // FindSubcommand said why
    return [subcommand, files = flags.List("files"), settings] {
      return cli::RunTraceProgram(subcommand->function, files, settings);
    };
  };
  auto help_for = [&options](const cxxopts::ParseResult& parsed) -> std::optional<std::string> {
    if (!parsed.count("subcommand")) return std::nullopt;
    for (const Subcommand& s : kSubcommands) {
      if (parsed["subcommand"].as<std::string>() != s.name) continue;
      const std::string name = s.name;
      const std::vector<std::string> groups = {name == "summary" ? "Summary"
                                               : name == "plot"  ? "Plot"
                                                                 : ""};
      return cli::SubcommandHelp(options, s.name, s.help, "[FILE...]", groups);
    }
    return std::nullopt;
  };
  return cli::RunMain(options, {"Summary", "Plot", "Common"}, argc, argv, read_flags, help_for);
}
