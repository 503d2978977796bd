#include "server/welcome.h"

namespace dmlps::server {

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

}  // namespace dmlps::server
