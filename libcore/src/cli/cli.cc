#include "dmlps/cli/cli.h"

#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "dmlps/base/printable.h"

namespace dmlps::cli {
namespace {

std::atomic<int> g_signal{0};

void OnSignal(int signal) { g_signal.store(signal); }

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::vector<std::string> LongNames(const cxxopts::Options& options) {
  std::vector<std::string> names;
  for (const std::string& group : options.groups()) {
    for (const cxxopts::HelpOptionDetails& option : options.group_help(group).options) {
      for (const std::string& name : option.l) names.push_back(name);
    }
  }
  return names;
}

// The first argument before "--" that names no flag, as UnknownOption says
// it; cxxopts's own message when none is found.
std::string UnknownArgument(const cxxopts::Options& options, int argc, char** argv,
                            const std::exception& error) {
  const std::vector<std::string> known = LongNames(options);
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;
    if (!arg.starts_with("--")) continue;
    const std::string name(arg.substr(2, arg.find('=') - 2));
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return UnknownOption(arg.substr(0, arg.find('=')), known);
    }
  }
  return error.what();
}

}  // namespace

void AddFlags(cxxopts::Options& options, const std::string& group, const std::vector<Flag>& flags) {
  cxxopts::OptionAdder adder = options.add_options(group);
  for (const Flag& flag : flags) {
    if (flag.arg == nullptr) {
      adder(flag.name, flag.help);
    } else if (flag.default_value) {
      adder(flag.name, flag.help, cxxopts::value<std::string>()->default_value(*flag.default_value),
            flag.arg);
    } else {
      adder(flag.name, flag.help, cxxopts::value<std::string>(), flag.arg);
    }
  }
}

void AddCommonOptions(cxxopts::Options& options, bool with_trace) {
  AddFlags(options, "Common",
           {{"h,help", "Print this help and exit"},
            {"version", "Print the version and exit"},
            {"v,verbose", "Log more (repeat for more still)"},
            {"q,quiet", "Log only warnings and errors; no progress line"},
            {"log-level", "Log level: trace, debug, info, warn, error, critical, off", "LEVEL"}});
  if (with_trace) {
    AddFlags(options, "Common",
             {{"trace",
               "Write a trace of every event to FILE (- for standard output); see "
               "dmlps-trace(5)",
               "FILE"}});
  }
}

std::string FlagReader::String(const std::string& name) { return result_[name].as<std::string>(); }

int64_t FlagReader::Int(const std::string& name, int64_t min, int64_t max) {
  const std::string text = String(name);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    AddProblem("--" + name + ": '" + text + "' is not an integer");
    return min;
  }
  if (value < min || value > max) {
    AddProblem("--" + name + ": " + text + " is outside [" + std::to_string(min) + ", " +
               std::to_string(max) + "]");
    return min;
  }
  return value;
}

double FlagReader::Real(const std::string& name, double min, double max) {
  const std::string text = String(name);
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value)) {
    AddProblem("--" + name + ": '" + text + "' is not a number");
    return min;
  }
  if (value < min || value > max) {
    AddProblem("--" + name + ": " + text + " is outside [" + fmt::format("{}", min) + ", " +
               fmt::format("{}", max) + "]");
    return min;
  }
  return value;
}

std::vector<std::string> FlagReader::List(const std::string& name) const {
  if (!Has(name)) return {};
  return result_[name].as<std::vector<std::string>>();
}

void FlagReader::AddProblems(const std::vector<std::string>& problems) {
  for (const std::string& p : problems) {
    // One complaint per flag: a value already refused is not judged again.
    const std::string flag = p.substr(0, p.find_first_of(": "));
    const bool known = std::any_of(problems_.begin(), problems_.end(), [&](const std::string& q) {
      return q.substr(0, q.find_first_of(": ")) == flag;
    });
    if (!known) AddProblem(p);
  }
}

std::string UnknownOption(std::string_view arg, const std::vector<std::string>& known) {
  std::string text = "unknown option '" + std::string(arg) + "'";
  std::string_view name =
      arg.substr(arg.find_first_not_of('-') == std::string_view::npos ? arg.size()
                                                                      : arg.find_first_not_of('-'));
  name = name.substr(0, name.find('='));
  // Within a third of the name's length in edits, and at least two.
  size_t best = std::max<size_t>(2, name.size() / 3) + 1;
  std::string guess;
  for (const std::string& candidate : known) {
    const size_t d = EditDistance(name, candidate);
    if (d < best) best = d, guess = candidate;
  }
  if (!guess.empty()) text += "; did you mean --" + guess + "?";
  return text;
}

std::optional<cxxopts::ParseResult> ParseArgs(cxxopts::Options& options,
                                              const std::vector<std::string>& help_groups, int argc,
                                              char** argv, int* exit_code,
                                              const HelpFor& help_for) {
  try {
    cxxopts::ParseResult result = options.parse(argc, argv);
    if (result.count("help")) {
      std::optional<std::string> narrow = help_for ? help_for(result) : std::nullopt;
      std::cout << (narrow ? *narrow : options.help(help_groups)) << std::flush;
      *exit_code = 0;
      return std::nullopt;
    }
    if (result.count("version")) {
      std::cout << options.program() << " " << DMLPS_VERSION << "\n" << std::flush;
      *exit_code = 0;
      return std::nullopt;
    }
    std::vector<std::string> problems;
    if (result.count("log-level")) {
      const std::string level = result["log-level"].as<std::string>();
      static constexpr std::string_view kLevels[] = {"trace", "debug",    "info", "warn",
                                                     "error", "critical", "off"};
      if (std::find(std::begin(kLevels), std::end(kLevels), level) == std::end(kLevels)) {
        problems.push_back("--log-level: unknown level '" + level +
                           "' (trace, debug, info, warn, error, critical, off)");
      }
    }
    if (!result.unmatched().empty() || !problems.empty()) {
      for (const std::string& arg : result.unmatched()) {
        problems.push_back("unexpected argument '" + arg + "'");
      }
      *exit_code = ReportUsageErrors(options.program(), problems);
      return std::nullopt;
    }
    return result;
  } catch (const cxxopts::exceptions::no_such_option& e) {
    *exit_code = ReportUsageErrors(options.program(), {UnknownArgument(options, argc, argv, e)});
    return std::nullopt;
  } catch (const cxxopts::exceptions::exception& e) {
    *exit_code = ReportUsageErrors(options.program(), {e.what()});
    return std::nullopt;
  }
}

int RunMain(cxxopts::Options& options, const std::vector<std::string>& help_groups, int argc,
            char** argv, const std::function<Program(FlagReader& flags)>& read,
            const HelpFor& help_for) {
  int exit_code = 0;
  std::optional<cxxopts::ParseResult> parsed =
      ParseArgs(options, help_groups, argc, argv, &exit_code, help_for);
  if (!parsed) return exit_code;
  FlagReader flags(*parsed);
  const Program program = read(flags);
  if (!flags.problems().empty()) return ReportUsageErrors(options.program(), flags.problems());
  SetupLogging(options.program(), *parsed);
  return program();
}

void SetupLogging(std::string_view program, const cxxopts::ParseResult& result) {
  const bool color = isatty(STDERR_FILENO) && std::getenv("NO_COLOR") == nullptr;
  std::shared_ptr<spdlog::logger> logger;
  if (color) {
    logger = spdlog::stderr_color_mt(std::string(program));
  } else {
    logger = spdlog::stderr_logger_mt(std::string(program));
  }
  // On a terminal a log line first erases the status line (StatusLine) it
  // would otherwise run into; that line is drawn again after it.
  const std::string erase = isatty(STDERR_FILENO) ? "\r\033[K" : "";
  // A message that quotes a peer (a host name, an error it reports) or
  // the environment cannot start a line of its own: its control
  // characters are escaped.
  logger->set_formatter(
      PrintableLogFormatter(erase + "%H:%M:%S.%e " + std::string(program) + ": %^%l%$: %v"));
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::info);
  spdlog::cfg::load_env_levels();
  if (result.count("verbose")) {
    spdlog::set_level(result.count("verbose") > 1 ? spdlog::level::trace : spdlog::level::debug);
  }
  if (result.count("quiet")) spdlog::set_level(spdlog::level::warn);
  if (result.count("log-level")) {
    spdlog::set_level(spdlog::level::from_str(result["log-level"].as<std::string>()));
  }
}

int ReportUsageErrors(std::string_view program, const std::vector<std::string>& problems) {
  for (const std::string& p : problems)
    std::fprintf(stderr, "%.*s: error: %s\n", static_cast<int>(program.size()), program.data(),
                 Printable(p).c_str());
  std::fprintf(stderr, "Try '%.*s --help' for more information.\n",
               static_cast<int>(program.size()), program.data());
  return kExitUsage;
}

int ReportError(std::string_view program, const Status& status) {
  std::fprintf(stderr, "%.*s: error: %s\n", static_cast<int>(program.size()), program.data(),
               Printable(status.message()).c_str());
  return ExitCodeFor(status);
}

std::string ProgramFolder() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return ".";
  return std::filesystem::path(std::string(path, static_cast<size_t>(n))).parent_path().string();
}

const std::atomic<int>* InstallSignalHandlers() {
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  return &g_signal;
}

}  // namespace dmlps::cli
