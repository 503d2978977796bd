#include "dmlps/cli/subcommands.h"

#include <algorithm>

namespace dmlps::cli {
namespace {

bool Contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

}  // namespace

void RefuseOtherGroupsFlags(FlagReader& flags, const cxxopts::Options& options,
                            const cxxopts::ParseResult& parsed, std::string_view subcommand,
                            const std::vector<std::string>& groups,
                            const std::vector<std::string>& own,
                            const std::vector<std::string>& borrowed) {
  const std::vector<std::string> defined = options.groups();
  for (const std::string& group : groups) {
    if (group == "Common" || !Contains(defined, group) || Contains(own, group)) continue;
    for (const cxxopts::HelpOptionDetails& option : options.group_help(group).options) {
      if (!option.l.empty() && Contains(borrowed, option.l.front())) continue;
      if (parsed.count(option.l.empty() ? option.s : option.l.front()) > 0) {
        flags.AddProblem("--" + option.l.front() + " does not apply to " + std::string(subcommand));
      }
    }
  }
}

}  // namespace dmlps::cli
