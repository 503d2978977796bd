// dmlps-bench: whole experiments. `run` trains real clusters of dmlps-server
// and dmlps-worker processes on this host under each policy, `sim` simulates
// bigger clusters with the same policy code, `transport` measures messaging
// against raw ZeroMQ and memcpy, `profile` times a worker's step against
// its batch size, `codec` times the compression codecs against memcpy.
#include <string>
#include <vector>

#include "cmd/dmlps-bench/commands.h"
#include "dmlps/cli/policy_list.h"
#include "dmlps/cli/subcommands.h"

namespace {

namespace bench_cli = dmlps::bench_cli;

struct Subcommand {
  const char* name;
  const char* help;
  std::vector<std::string> groups;  // option groups it reads, beside Common
  dmlps::cli::Program (*read_flags)(dmlps::cli::FlagReader&);
  // Flags it reads from groups not its own, with its defaults for them.
  std::vector<dmlps::cli::BorrowedFlag> borrowed = {};
};

const std::vector<Subcommand>& Subcommands() {
  static const std::vector<Subcommand> kSubcommands = {
      {"run",
       "train real clusters on this host under each policy; a table of the results",
       {"Experiment", "Run", "Output"},
       bench_cli::ReadRunFlags,
       {{"shards", "1"}, {"codecs"}}},
      {"sim",
       "simulate clusters of any size with the same policies, in virtual time",
       {"Experiment", "Simulation", "Output"},
       bench_cli::ReadSimFlags,
       {{"shards", "1"}, {"codecs"}}},
      {"transport",
       "push+pull round trips against raw ZeroMQ and memcpy",
       {"Transport", "Output"},
       bench_cli::ReadTransportFlags},
      {"profile",
       "a worker's step time against batch size, on the CPU or a GPU",
       {"Profile", "Output"},
       bench_cli::ReadProfileFlags,
       bench_cli::ProfileBorrowedFlags()},
      {"codec",
       "encode and decode speed of each compression codec against memcpy, on one core",
       {"Codec", "Output"},
       bench_cli::ReadCodecFlags,
       bench_cli::CodecBorrowedFlags()},
      {"advise",
       "predict each policy from the traces of a short run of this cluster; recommend one",
       {"Advise", "Output"},
       bench_cli::ReadAdviseFlags,
       {{"target"}}},
  };
  return kSubcommands;
}

}  // namespace

int main(int argc, char** argv) {
  namespace cli = dmlps::cli;
  cxxopts::Options options(
      std::string(cli::kBenchProgram),
      cli::DescribeSubcommands("Runs whole experiments and tabulates them on stdout; progress goes "
                               "to stderr.\n\n",
                               Subcommands(), 11));
  options.positional_help("SUBCOMMAND");
  bench_cli::AddOptions(options);

  auto read_flags = [&options](cli::FlagReader& flags) -> cli::Program {
    // A question about the program, answered with or without a subcommand.
    if (flags.Has("list-policies")) return cli::ListPoliciesProgram(cli::PolicyList::kBench);
    const Subcommand* subcommand =
        cli::FindSubcommand(flags, Subcommands(), cli::SubcommandNames(Subcommands()));
    if (subcommand == nullptr) return nullptr;  // FindSubcommand said why
    cli::RefuseOtherGroupsFlags(flags, options, subcommand->name, bench_cli::HelpGroups(),
                                subcommand->groups, subcommand->borrowed);
    if (std::string(subcommand->name) != "advise" && flags.Has("traces")) {
      flags.AddProblem("unexpected argument '" + flags.List("traces").front() + "'");
    }
    return subcommand->read_flags(flags);
  };
  auto help_for = [&options](const cxxopts::ParseResult& parsed) -> std::optional<std::string> {
    if (!parsed.count("subcommand")) return std::nullopt;
    for (const Subcommand& s : Subcommands()) {
      if (parsed["subcommand"].as<std::string>() == s.name) {
        const char* positional =
            std::string(s.name) == "advise" ? "TRACE... | RUN-TRACE-FOLDER" : "";
        return cli::SubcommandHelp(options, s.name, s.help, positional, s.groups, s.borrowed);
      }
    }
    return std::nullopt;
  };
  return cli::RunMain(options, bench_cli::HelpGroups(), argc, argv, read_flags, help_for);
}
