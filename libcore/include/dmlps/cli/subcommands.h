// A binary with subcommands (dmlps-bench, dmlps-trace) keeps them in a
// table of {name, help, function}, as ninja keeps its subtools; these read
// any such table (entries with `name` and `help`) for --help and to pick
// the subcommand the command line names.
#ifndef DMLPS_CLI_SUBCOMMANDS_H_
#define DMLPS_CLI_SUBCOMMANDS_H_

#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/cli/cli.h"
#include "dmlps/cli/cxxopts.h"

namespace dmlps::cli {

// `intro`, then "Subcommands:" and a line per entry: its name padded to
// `width` columns, then its help. REQUIRES: every name shorter than width.
template <typename Table>
std::string DescribeSubcommands(std::string_view intro, const Table& table, size_t width) {
  std::string text(intro);
  text += "Subcommands:\n";
  for (const auto& entry : table) {
    const std::string_view name = entry.name;
    text += "  ";
    text += name;
    text.append(width - name.size(), ' ');
    text += entry.help;
    text += '\n';
  }
  return text;
}

// The names, comma-separated, `last` before the last one: "a, b, c" or,
// with " or ", "a, b or c".
template <typename Table>
std::string SubcommandNames(const Table& table, std::string_view last = ", ") {
  std::string names;
  const auto end = std::end(table);
  for (auto it = std::begin(table); it != end; ++it) {
    if (it != std::begin(table)) names += std::next(it) == end ? last : std::string_view(", ");
    names += it->name;
  }
  return names;
}

// The entry the positional argument "subcommand" names. When there is none
// or no such entry, adds "no subcommand (NAMES)" or "unknown subcommand 'X'
// (NAMES)" to `flags` and returns nullptr.
template <typename Table>
auto FindSubcommand(FlagReader& flags, const Table& table, std::string_view names)
    -> decltype(&*std::begin(table)) {
  if (!flags.Has("subcommand")) {
    flags.AddProblem("no subcommand (" + std::string(names) + ")");
    return nullptr;
  }
  const std::string name = flags.String("subcommand");
  for (const auto& entry : table) {
    if (name == entry.name) return &entry;
  }
  flags.AddProblem("unknown subcommand '" + name + "' (" + std::string(names) + ")");
  return nullptr;
}

// A flag a subcommand reads from another subcommand's group, with the
// default it takes when the flag is not given, which its --help shows in
// place of the group's (none: shown without a default).
struct BorrowedFlag {
  std::string name;
  std::optional<std::string> default_value = std::nullopt;
};

// Adds "--FLAG does not apply to SUBCOMMAND" for each flag on the command
// line from one of `groups` that is not among `own` (nor Common), unless it
// is one of `borrowed`: all subcommands share one parser, so that --help
// shows every flag, and a flag of another one is a mistake worth saying.
void RefuseOtherGroupsFlags(FlagReader& flags, const cxxopts::Options& options,
                            std::string_view subcommand, const std::vector<std::string>& groups,
                            const std::vector<std::string>& own,
                            const std::vector<BorrowedFlag>& borrowed);

// What one subcommand's --help prints, as git and torchrun print it:
// "PROGRAM SUBCOMMAND: HELP", its usage line (`positional` after the
// options), then the flags of `options` in `groups`, those named in
// `borrowed` from other groups (as "Shared options", each with the
// subcommand's own default), and Common.
std::string SubcommandHelp(const cxxopts::Options& options, std::string_view subcommand,
                           std::string_view help, std::string_view positional,
                           const std::vector<std::string>& groups,
                           const std::vector<BorrowedFlag>& borrowed = {});

}  // namespace dmlps::cli

#endif  // DMLPS_CLI_SUBCOMMANDS_H_
