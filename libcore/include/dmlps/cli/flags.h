// Flags that more than one binary declares, declared here once so that they
// are spelled, ranged and explained alike everywhere.
#ifndef DMLPS_CLI_FLAGS_H_
#define DMLPS_CLI_FLAGS_H_

#include <cstdint>
#include <string>

#include "dmlps/cli/cli.h"
#include "dmlps/cli/cxxopts.h"

namespace dmlps::cli {

// The training job as dmlps-server trains it and dmlps-bench passes it on to
// the servers it starts: --model, --data, --batch, --lr and --momentum.
struct TrainingFlags {
  std::string model;
  std::string data;
  int64_t batch = 0;
  double lr = 0;
  double momentum = 0;
};

// Adds the training flags to `group` with `defaults` as their defaults
// (--help shows them): a binary keeps the defaults its documented results
// were measured with (dmlps-server: batch 64, lr 0.05; dmlps-bench: batch
// 256, lr 0.1). `external_model`: --model also takes "external" (the server).
void AddTrainingOptions(cxxopts::Options& options, const std::string& group,
                        const TrainingFlags& defaults, bool external_model = false);
// Reads the flags AddTrainingOptions added, each checked against the same
// range in every binary; problems collect in `flags`.
TrainingFlags ReadTrainingOptions(FlagReader& flags);

}  // namespace dmlps::cli

#endif  // DMLPS_CLI_FLAGS_H_
