#include "dmlps/cli/subcommands.h"

#include <algorithm>

namespace dmlps::cli {
namespace {

bool Contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// The entry of `borrowed` for `flag`; null: not borrowed.
const BorrowedFlag* FindBorrowed(const std::vector<BorrowedFlag>& borrowed,
                                 const std::vector<std::string>& names) {
  if (names.empty()) return nullptr;
  for (const BorrowedFlag& entry : borrowed) {
    if (entry.name == names.front()) return &entry;
  }
  return nullptr;
}

// Adds one flag, as `from` describes it, to `group` of `to`; `borrowed`
// (null: none) gives the default shown in place of `from`'s.
void CopyFlag(cxxopts::Options& to, const std::string& group,
              const cxxopts::HelpOptionDetails& from, const BorrowedFlag* borrowed = nullptr) {
  std::string spec = from.s.empty() ? "" : from.s + ",";
  spec += from.l.empty() ? "" : from.l.front();
  if (from.arg_help.empty() && from.is_boolean) {
    to.add_options(group)(spec, from.desc);
    return;
  }
  auto value = cxxopts::value<std::string>();
  if (borrowed != nullptr) {
    if (borrowed->default_value) value->default_value(*borrowed->default_value);
  } else if (from.has_default) {
    value->default_value(from.default_value);
  }
  to.add_options(group)(spec, from.desc, value, from.arg_help);
}

}  // namespace

std::string SubcommandHelp(const cxxopts::Options& options, std::string_view subcommand,
                           std::string_view help, std::string_view positional,
                           const std::vector<std::string>& groups,
                           const std::vector<BorrowedFlag>& borrowed) {
  cxxopts::Options narrow(
      options.program() + " " + std::string(subcommand),
      options.program() + " " + std::string(subcommand) + ": " + std::string(help) + "\n");
  narrow.custom_help(positional.empty() ? "[OPTION...]" : "[OPTION...] " + std::string(positional));
  const std::vector<std::string> defined = options.groups();
  std::vector<std::string> shown;
  for (const std::string& group : groups) {
    if (!Contains(defined, group) || group == "Common") continue;
    for (const auto& option : options.group_help(group).options) CopyFlag(narrow, group, option);
    shown.push_back(group);
  }
  bool shared = false;
  for (const std::string& group : defined) {
    if (Contains(groups, group) || group == "Common") continue;
    for (const auto& option : options.group_help(group).options) {
      const BorrowedFlag* entry = FindBorrowed(borrowed, option.l);
      if (entry == nullptr) continue;
      CopyFlag(narrow, "Shared", option, entry);
      shared = true;
    }
  }
  if (shared) shown.push_back("Shared");
  if (Contains(defined, "Common")) {
    for (const auto& option : options.group_help("Common").options) {
      CopyFlag(narrow, "Common", option);
    }
    shown.push_back("Common");
  }
  return narrow.help(shown);
}

void RefuseOtherGroupsFlags(FlagReader& flags, const cxxopts::Options& options,
                            std::string_view subcommand, const std::vector<std::string>& groups,
                            const std::vector<std::string>& own,
                            const std::vector<BorrowedFlag>& borrowed) {
  const std::vector<std::string> defined = options.groups();
  for (const std::string& group : groups) {
    if (group == "Common" || !Contains(defined, group) || Contains(own, group)) continue;
    for (const cxxopts::HelpOptionDetails& option : options.group_help(group).options) {
      if (FindBorrowed(borrowed, option.l) != nullptr) continue;
      if (flags.Has(option.l.empty() ? option.s : option.l.front())) {
        flags.AddProblem("--" + option.l.front() + " does not apply to " + std::string(subcommand));
      }
    }
  }
}

}  // namespace dmlps::cli
