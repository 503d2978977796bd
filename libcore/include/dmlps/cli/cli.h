// What every dmlps binary shares: the common flags, strict flag parsing that
// reports every problem at once, logging to stderr, signals, exit codes.
#ifndef DMLPS_CLI_CLI_H_
#define DMLPS_CLI_CLI_H_

#include <atomic>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/cli/cxxopts.h"

namespace dmlps::cli {

// Exit codes beyond those ExitCodeFor gives for a Status.
inline constexpr int kExitRunFailed = 1;  // the run itself failed: target missed, worker lost
inline constexpr int kExitUsage = 64;

// One row of a table of flags, as --help shows it. Every dmlps flag takes
// its value as text, which FlagReader reads strictly, so a row says only
// what --help says and what the flag holds when not given.
struct Flag {
  const char* name;  // "workers", or "h,help" with a short form
  std::string help;
  const char* arg = nullptr;  // the value's name ("N"); nullptr: a switch, given or not
  std::optional<std::string> default_value = std::nullopt;  // none: absent unless given
};

// Adds the flags to `group`, in the order --help lists them.
void AddFlags(cxxopts::Options& options, const std::string& group, const std::vector<Flag>& flags);

// Adds --help, --version, -v/--verbose, -q/--quiet and --log-level, and
// --trace FILE for the binaries that write traces.
void AddCommonOptions(cxxopts::Options& options, bool with_trace = false);

// Reads flag values strictly (the whole text must be a number in range) and
// collects every problem instead of stopping at the first.
class FlagReader {
 public:
  explicit FlagReader(const cxxopts::ParseResult& result) : result_(result) {}

  std::string String(const std::string& name);
  int64_t Int(const std::string& name, int64_t min = std::numeric_limits<int64_t>::min(),
              int64_t max = std::numeric_limits<int64_t>::max());
  double Real(const std::string& name, double min = -std::numeric_limits<double>::infinity(),
              double max = std::numeric_limits<double>::infinity());
  bool Has(const std::string& name) const { return result_.count(name) > 0; }
  // The values of a list flag, such as positional FILE...; none when absent.
  std::vector<std::string> List(const std::string& name) const;

  void AddProblem(std::string problem) { problems_.push_back(std::move(problem)); }
  // Adds problems found later, skipping those about a flag already refused.
  void AddProblems(const std::vector<std::string>& problems);
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  const cxxopts::ParseResult& result_;
  std::vector<std::string> problems_;
};

// The help text for the command line parsed so far, when it is narrower
// than the whole program's (`dmlps-bench run --help`: that subcommand's
// flags only); nullopt for the program's own.
using HelpFor = std::function<std::optional<std::string>(const cxxopts::ParseResult&)>;

// Parses argv. On --help (help_for's text, else groups in the order of
// `help_groups`) or --version prints to stdout and sets *exit_code to 0; on a
// bad command line prints one line per problem (an unknown flag with the
// known one it most resembles) and sets it to 64. Returns the parse result
// only when the program should go on.
std::optional<cxxopts::ParseResult> ParseArgs(cxxopts::Options& options,
                                              const std::vector<std::string>& help_groups, int argc,
                                              char** argv, int* exit_code,
                                              const HelpFor& help_for = nullptr);

// "unknown option '--ARG'", with "; did you mean --NAME?" when one of
// `known` (long names, without dashes) is within a few edits of it.
std::string UnknownOption(std::string_view arg, const std::vector<std::string>& known);

// What main() runs once its flags are read and checked; returns the exit
// code.
using Program = std::function<int()>;

// The body of every dmlps main() once its flags are declared: parses argv
// (as ParseArgs: --help, --version and a bad command line end there), then
// `read` reads the flags into what the program needs, collecting every
// problem in `flags`, and returns the program to run with it (or nullptr,
// once it has collected a problem); `help_for` as for ParseArgs. When problems were found, prints
// them all and returns 64 without running it; else sets up logging under options.program() and
// returns the program's exit code.
int RunMain(cxxopts::Options& options, const std::vector<std::string>& help_groups, int argc,
            char** argv, const std::function<Program(FlagReader& flags)>& read,
            const HelpFor& help_for = nullptr);

// Installs a stderr logger named after the program (spdlog's default writes
// to stdout, which is for data), then applies SPDLOG_LEVEL and the flags.
// Colour only on a terminal and never when NO_COLOR is set.
void SetupLogging(std::string_view program, const cxxopts::ParseResult& result);

// Prints "program: error: problem" for each problem; returns 64.
int ReportUsageErrors(std::string_view program, const std::vector<std::string>& problems);
// Prints "program: error: message"; returns the exit code for the status.
int ReportError(std::string_view program, const Status& status);

// The folder this program lives in ("." when /proc cannot say): the dmlps
// binaries are installed, and built, side by side.
std::string ProgramFolder();

// SIGINT and SIGTERM set a flag instead of killing the process, so runs can
// stop their peers and exit cleanly. Returns the flag (0, or the signal).
const std::atomic<int>* InstallSignalHandlers();
// 128 + signal, as shells report it.
inline int ExitCodeForSignal(int signal) { return 128 + signal; }

}  // namespace dmlps::cli

#endif  // DMLPS_CLI_CLI_H_
