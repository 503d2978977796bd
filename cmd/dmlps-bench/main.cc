// dmlps-bench: whole experiments. `run` trains real clusters of dmlps-server
// and dmlps-worker processes on this host under each policy, `sim` simulates
// bigger clusters with the same policy code, `transport` measures messaging
// against raw ZeroMQ and memcpy, `profile` times a worker's step against
// its batch size.
#include <algorithm>
#include <string>
#include <vector>

#include "cmd/dmlps-bench/commands.h"

namespace {

using dmlps::bench_cli::kProgram;

struct Subcommand {
  const char* name;
  const char* help;
  std::vector<std::string> groups;  // option groups it reads, beside Common
  int (*body)(const cxxopts::ParseResult&, dmlps::cli::FlagReader&);
  std::vector<std::string> borrowed = {};  // flags it reads from groups not its own
};

const std::vector<Subcommand>& Subcommands() {
  static const std::vector<Subcommand> kSubcommands = {
      {"run", "train real clusters on this host under each policy; a table of the results",
       {"Experiment", "Run", "Output"}, dmlps::bench_cli::RunCommand},
      {"sim", "simulate clusters of any size with the same policies, in virtual time",
       {"Experiment", "Simulation", "Output"}, dmlps::bench_cli::SimCommand},
      {"transport", "push+pull round trips against raw ZeroMQ and memcpy",
       {"Transport", "Output"}, dmlps::bench_cli::TransportCommand},
      {"profile", "a worker's step time against batch size, on the CPU or a GPU",
       {"Profile", "Output"}, dmlps::bench_cli::ProfileCommand,
       {"batch", "model", "data", "threads", "warmup"}},
  };
  return kSubcommands;
}

std::string Description() {
  std::string text =
      "Runs whole experiments and tabulates them on stdout; progress goes to stderr.\n\n"
      "Subcommands:\n";
  for (const Subcommand& s : Subcommands()) {
    text += "  ";
    text += s.name;
    text.append(11 - std::string_view(s.name).size(), ' ');
    text += s.help;
    text += '\n';
  }
  return text;
}

std::string Names() {
  std::string names;
  for (const Subcommand& s : Subcommands()) {
    if (!names.empty()) names += ", ";
    names += s.name;
  }
  return names;
}

}  // namespace

int main(int argc, char** argv) {
  cxxopts::Options options(std::string(kProgram), Description());
  options.positional_help("SUBCOMMAND");
  dmlps::bench_cli::AddExperimentOptions(options);
  dmlps::bench_cli::AddRunOptions(options);
  dmlps::bench_cli::AddSimOptions(options);
  dmlps::bench_cli::AddTransportOptions(options);
  dmlps::bench_cli::AddProfileOptions(options);
  dmlps::bench_cli::AddOutputOptions(options);
  options.add_options("Positional")("subcommand", "", cxxopts::value<std::string>());
  options.parse_positional({"subcommand"});
  dmlps::cli::AddCommonOptions(options);

  const std::vector<std::string> groups = {"Experiment", "Run",     "Simulation", "Transport",
                                           "Profile",    "Output", "Common"};
  int exit_code = 0;
  std::optional<cxxopts::ParseResult> parsed =
      dmlps::cli::ParseArgs(options, groups, argc, argv, &exit_code);
  if (!parsed) return exit_code;
  dmlps::cli::FlagReader flags(*parsed);

  if (!flags.Has("subcommand")) {
    flags.AddProblem("no subcommand (" + Names() + ")");
    return dmlps::cli::ReportUsageErrors(kProgram, flags.problems());
  }
  const std::string name = flags.String("subcommand");
  const Subcommand* subcommand = nullptr;
  for (const Subcommand& s : Subcommands()) {
    if (name == s.name) subcommand = &s;
  }
  if (subcommand == nullptr) {
    flags.AddProblem("unknown subcommand '" + name + "' (" + Names() + ")");
    return dmlps::cli::ReportUsageErrors(kProgram, flags.problems());
  }
  // A flag of another subcommand's group is a mistake worth saying.
  const std::vector<std::string> defined = options.groups();
  for (const std::string& group : groups) {
    if (group == "Common" || std::find(defined.begin(), defined.end(), group) == defined.end()) {
      continue;
    }
    bool own = false;
    for (const std::string& g : subcommand->groups) own = own || g == group;
    if (own) continue;
    for (const cxxopts::HelpOptionDetails& option : options.group_help(group).options) {
      const std::vector<std::string>& borrowed = subcommand->borrowed;
      if (!option.l.empty() &&
          std::find(borrowed.begin(), borrowed.end(), option.l.front()) != borrowed.end()) {
        continue;
      }
      if (parsed->count(option.l.empty() ? option.s : option.l.front()) > 0) {
        flags.AddProblem("--" + option.l.front() + " does not apply to " + name);
      }
    }
  }
  return subcommand->body(*parsed, flags);
}
