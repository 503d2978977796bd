#include "server/welcome.h"

#include <utility>

#include "dmlps/compress/compress.h"
#include "server/aggregate.h"

namespace dmlps::server {
namespace {

// A codec flag as the job uses it. REQUIRES: ValidateConfig accepted it.
compress::Codec CodecOf(const std::string& flag) { return compress::ParseCodec(flag).value(); }

}  // namespace

proto::Welcome JobWelcome(const ServerConfig& config, const model::ModelSpec* spec,
                          const std::string& policy) {
  proto::Welcome welcome;
  welcome.model = spec != nullptr ? spec->Name() : std::string(kExternalModel);
  welcome.policy = policy;
  // A server shard sizes its connection limit by it.
  welcome.num_workers = config.job.workers;
  welcome.input_dim = spec != nullptr ? spec->input_dim : 0;
  welcome.classes = spec != nullptr ? spec->classes : 0;
  welcome.seed = config.job.seed;
  welcome.lr = config.job.lr;
  welcome.momentum = config.job.momentum;
  welcome.optimizer = ServerOptimizerSettings(config);
  return welcome;
}

proto::Welcome WorkerWelcome(const ServerConfig& config, const model::ModelSpec* spec,
                             const sync::Policy& policy, int64_t rank, int64_t num_params,
                             int64_t num_state) {
  proto::Welcome welcome = JobWelcome(config, spec, policy.Name());
  welcome.rank = rank;
  welcome.num_workers = config.job.workers;
  welcome.batch = config.job.batch;
  // A rank beyond --workers (a worker that joined a running job) shares a
  // shard with a lower rank.
  welcome.shard_index = rank % config.job.workers;
  welcome.shard_count = config.job.workers;
  welcome.mode = std::string(sync::WorkerModeName(policy.mode()));
  welcome.chunk = config.policy.chunk;
  welcome.token_size = config.policy.token_size;
  if (policy.mode() == sync::WorkerMode::kLocalSgd) welcome.local_steps = config.policy.local_steps;
  welcome.num_params = num_params;
  welcome.num_state = num_state;
  welcome.push_codec = compress::CodecName(CodecOf(config.push_codec));
  welcome.pull_codec = compress::CodecName(CodecOf(config.pull_codec));
  return welcome;
}

int64_t MaxPushSamples(const ServerConfig& config, sync::WorkerMode mode) {
  switch (mode) {
    case sync::WorkerMode::kSync:
    case sync::WorkerMode::kChunked:
      return config.job.batch;
    case sync::WorkerMode::kToken:
      return config.policy.token_size;
    case sync::WorkerMode::kLocalSgd:
      // One push stands for the H local steps' samples.
      return config.job.batch * config.policy.local_steps;
    case sync::WorkerMode::kLocal:
    case sync::WorkerMode::kLocalOverlap:
      return 0;
  }
  return 0;
}

WorkerDeskOptions DeskOptions(const ServerConfig& config, sync::WorkerMode mode,
                              std::vector<model::TensorSpec> layout, int64_t max_message_bytes) {
  // A robust rule holds against some bad workers of so many: extra
  // identities joining a running job would shift that share (one process
  // opening five connections into four workers outvotes them), so its job
  // grows no ranks beyond --workers; a lost worker's rank may be taken again.
  // (ValidateConfig checked the rule.)
  const bool robust = ParseAggregation(config.aggregate).value().robust();
  return WorkerDeskOptions{
      .workers = config.job.workers,
      .worker_timeout = config.worker_timeout,
      .max_message_bytes = max_message_bytes,
      .layout = std::move(layout),
      .peer = nullptr,
      .max_push_samples = MaxPushSamples(config, mode),
      .max_ranks = robust ? config.job.workers : kMaxRanks,

      .why_bounded = robust ? "all --workers; under --aggregate " + config.aggregate +
                                  " no more may join (the rule's share of bad workers)"
                            : "the most it takes",
      .push_codec = CodecOf(config.push_codec),
      .pull_codec = CodecOf(config.pull_codec)};
}

}  // namespace dmlps::server
