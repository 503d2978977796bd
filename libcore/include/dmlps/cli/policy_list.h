// The policies as their registry rows (sync/registry.h) list them, for
// those who would otherwise keep a list by hand: `--list-policies` of
// dmlps-server and dmlps-bench, which the shell completions read at
// completion time, and the lists the man pages are built with
// (man/CMakeLists.txt).
#ifndef DMLPS_CLI_POLICY_LIST_H_
#define DMLPS_CLI_POLICY_LIST_H_

#include <string>
#include <string_view>

#include "dmlps/base/status.h"
#include "dmlps/cli/cli.h"
#include "dmlps/cli/cxxopts.h"

namespace dmlps::cli {

// Which rows a list holds: the policies dmlps-server's --policy takes, or
// every entry dmlps-bench's --policies takes (the policies and the entries
// that run one of them with a preset).
enum class PolicyList { kServer, kBench };

// One row a line, in the registry's order, four tab-separated fields: the
// name; how it is asked for beyond its name (kServer: its flags,
// "[--staleness S] [--momentum-every N]"; kBench: the entry's syntax,
// "ssp[:S]"), "-" for nothing; "switchable" where auto and its
// --candidates can switch into it, else "-"; and what it does, in a few
// words. No field is empty and none holds a tab.
std::string PolicyListText(PolicyList which);

// The same rows as an scdoc list, one item each: the name in bold, its
// flags or syntax, what it does, and (kServer) how its workers run their
// steps.
std::string PolicyListScdoc(PolicyList which);

// The scdoc comment line that stands for PolicyListScdoc in a man page's
// source (the rest of the line is free for a note).
inline constexpr std::string_view kPolicyListMarker = "; @policy-list@";

// `page`, an scdoc source, with each line that starts with
// kPolicyListMarker replaced by PolicyListScdoc(which); InvalidArgument
// when no line does.
Result<std::string> SplicePolicyList(std::string_view page, PolicyList which);

// Adds --list-policies to `group`, for `which` rows.
void AddListPoliciesFlag(cxxopts::Options& options, const std::string& group, PolicyList which);
// The program --list-policies runs: PolicyListText(which) on stdout, exit 0.
Program ListPoliciesProgram(PolicyList which);

}  // namespace dmlps::cli

#endif  // DMLPS_CLI_POLICY_LIST_H_
