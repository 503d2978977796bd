// dmlps-server's policy flags, declared and read as the policies' rows in
// sync/registry.h define them, so that a policy's flags come with its row.
#ifndef DMLPS_CLI_POLICY_FLAGS_H_
#define DMLPS_CLI_POLICY_FLAGS_H_

#include <string>

#include "dmlps/cli/cli.h"
#include "dmlps/cli/cxxopts.h"
#include "dmlps/sync/policy.h"

namespace dmlps::cli {

// Adds every policy flag (sync::PolicyFlags) to the "Policy" group, with
// `defaults`' values as their defaults.
void AddPolicyFlags(cxxopts::Options& options, const sync::PolicyConfig& defaults);
// Reads every policy flag into `policy` (its name and the run's settings
// stay), each checked against its range; then, for --policy `policy->name`,
// refuses the flags given that it does not take. Problems collect in
// `flags`.
void ReadPolicyFlags(FlagReader& flags, sync::PolicyConfig* policy);

}  // namespace dmlps::cli

#endif  // DMLPS_CLI_POLICY_FLAGS_H_
