// Flags that more than one binary declares, declared here once so that they
// are spelled, ranged and explained alike everywhere.
#ifndef DMLPS_CLI_FLAGS_H_
#define DMLPS_CLI_FLAGS_H_

#include <cstdint>
#include <string>

#include "dmlps/base/job.h"
#include "dmlps/cli/cli.h"
#include "dmlps/cli/cxxopts.h"

namespace dmlps::cli {

// The training flags of a job as dmlps-server trains it and dmlps-bench
// passes it on to the servers it starts: --model, --data, --batch, --lr and
// --momentum, with `defaults`' fields as their defaults (--help shows them):
// a binary keeps the defaults its documented results were measured with
// (dmlps-server: batch 64, lr 0.05; dmlps-bench: batch 256, lr 0.1).
// `external_model`: --model also takes "external" (the server).
void AddTrainingOptions(cxxopts::Options& options, const std::string& group,
                        const JobSpec& defaults, bool external_model = false);
// Reads the flags AddTrainingOptions added into `job`'s fields, each checked
// against the same range in every binary; problems collect in `flags`.
void ReadTrainingOptions(FlagReader& flags, JobSpec* job);

}  // namespace dmlps::cli

#endif  // DMLPS_CLI_FLAGS_H_
