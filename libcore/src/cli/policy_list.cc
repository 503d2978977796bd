#include "dmlps/cli/policy_list.h"

#include <spdlog/fmt/fmt.h>

#include <cstdio>
#include <vector>

#include "dmlps/sync/registry.h"

namespace dmlps::cli {
namespace {

// The rows `which` lists, in the registry's order.
std::vector<const sync::PolicyRow*> RowsOf(PolicyList which) {
  std::vector<const sync::PolicyRow*> rows;
  for (const sync::PolicyRow& row : sync::PolicyRows()) {
    if (which == PolicyList::kBench || row.runs.empty()) rows.push_back(&row);
  }
  return rows;
}

// "[--staleness S] [--switch-online]".
std::string FlagsUsage(const sync::PolicyRow& row) {
  std::string text;
  for (const sync::PolicyFlag* flag : sync::FlagsOf(row)) {
    if (!text.empty()) text += ' ';
    text += fmt::format("[--{}", flag->name);
    if (!flag->arg.empty()) text += fmt::format(" {}", flag->arg);
    text += ']';
  }
  return text;
}

}  // namespace

std::string PolicyListText(PolicyList which) {
  std::string text;
  for (const sync::PolicyRow* row : RowsOf(which)) {
    std::string usage;
    if (which == PolicyList::kServer) {
      usage = FlagsUsage(*row);
    } else if (!row->syntax.empty()) {
      usage = sync::EntrySyntax(*row);
    }
    const bool switchable = sync::TraitsOf(row->name).switchable;
    text += fmt::format("{}\t{}\t{}\t{}\n", row->name, usage.empty() ? "-" : usage,
                        switchable ? "switchable" : "-", row->help);
  }
  return text;
}

void AddListPoliciesFlag(cxxopts::Options& options, const std::string& group, PolicyList which) {
  AddFlags(options, group,
           {{"list-policies",
             which == PolicyList::kServer
                 ? "Print the policies --policy takes, one a line: its name, flags, whether "
                   "auto can switch into it, and what it does (tab-separated); then exit"
                 : "Print the entries --policies takes, one a line: its name, syntax, whether "
                   "auto can switch into it, and what it does (tab-separated); then exit"}});
}

Program ListPoliciesProgram(PolicyList which) {
  return [which] {
    const std::string text = PolicyListText(which);
    std::fwrite(text.data(), 1, text.size(), stdout);
    if (std::fflush(stdout) == 0) return 0;
    return ReportError(which == PolicyList::kServer ? "dmlps-server" : "dmlps-bench",
                       Status::IOError("writing the list to stdout failed"));
  };
}

}  // namespace dmlps::cli
