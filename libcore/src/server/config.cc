// What dmlps-server checks of its settings before anything starts.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dmlps/compress/compress.h"
#include "dmlps/data/dataset.h"
#include "dmlps/server/server.h"
#include "dmlps/sync/registry.h"
#include "server/aggregate.h"
#include "server/shard.h"

namespace dmlps::server {

namespace {

// Whether --aggregate is centred clipping, which keeps the momentum per
// worker (server/centered_clip.h).
bool CenteredClipping(const ServerConfig& config) {
  const Result<Aggregation> rule = ParseAggregation(config.aggregate);
  return rule.ok() && rule->rule == Aggregation::Rule::kCenteredClip;
}

// What an external model (the server does not compute it) rules out.
void AddExternalProblems(const ServerConfig& config, std::vector<std::string>* problems) {
  if (config.job.target_accuracy > 0 && !config.remote_evaluator) {
    problems->push_back(
        "--target-accuracy with --model external needs --evaluator: the server cannot compute "
        "an external model's accuracy, an evaluator process must");
  }
  if (config.job.target_loss > 0 && !config.remote_evaluator) {
    problems->push_back(
        "--target-loss with --model external needs --evaluator: the server cannot compute "
        "an external model's loss, an evaluator process must");
  }
}

// Roles the operator grants: the evaluator, the announcer of an external
// model and the other shards each prove themselves with the job secret or
// a key, never by coming first.
void AddRoleProblems(const ServerConfig& config, std::vector<std::string>* problems) {
  const bool secret = !config.secret_file.empty();
  if (config.remote_evaluator && !secret) {
    problems->push_back(
        "--evaluator needs --secret FILE (or DMLPS_SECRET_FILE; dmlps-keygen --secret FILE makes "
        "one): the evaluator must present it, so that no other peer takes its role");
  }
  if (config.job.model == kExternalModel && config.shard_index == 0 && !secret &&
      config.initial.empty() && config.resume.empty()) {
    problems->push_back(
        "--model external needs --initial FILE (the layout and values to start from) or --secret "
        "FILE for the worker that announces them, so that no peer chooses the model");
  }
  if (!config.initial.empty() && config.job.model != kExternalModel) {
    problems->push_back("--initial is for --model external");
  }
  if (!config.initial.empty() && !config.resume.empty()) {
    problems->push_back("--initial and --resume both set where the model starts: give one");
  }
  if (config.shard_count > 1 && !secret && config.curve_secret.empty()) {
    problems->push_back(
        "--shard without CURVE needs --secret FILE (the same on every shard): a server shard "
        "proves itself with it");
  }
}

// What the server's optimizer settings rule out.
void AddOptimizerProblems(const ServerConfig& config, std::vector<std::string>* problems) {
  // The outer optimizer's own settings are the policy's to check.
  optim::OptimizerSettings settings = config.optimizer;
  if (!sync::UsesOuterOptimizer(config.policy)) settings = ServerOptimizerSettings(config);
  settings.lr = config.job.lr;
  settings.momentum = settings.algorithm == "sgd" ? config.job.momentum : 0;
  for (std::string& problem : optim::SettingsProblems(settings)) {
    if (std::find(problems->begin(), problems->end(), problem) == problems->end()) {
      problems->push_back(std::move(problem));
    }
  }
  if (sync::UsesOuterOptimizer(config.policy) && (!settings.Plain() || settings.nesterov)) {
    problems->push_back("--policy " + config.policy.name +
                        " steps the model with its outer Nesterov SGD (--outer-lr, "
                        "--outer-momentum): --optimizer, --nesterov, --dampening, --weight-decay, "
                        "--param-group, --clip-grad-norm, --lr-schedule and --warmup are for the "
                        "other policies");
  }
}

// What the targets and limits rule out.
void AddStoppingProblems(const ServerConfig& config, std::vector<std::string>* problems) {
  if (!(config.job.target_accuracy >= 0 && config.job.target_accuracy <= 1)) {
    problems->push_back("--target-accuracy must be in [0, 1]");
  }
  if (!(config.job.target_loss >= 0) || !std::isfinite(config.job.target_loss)) {
    problems->push_back("--target-loss must be a finite number >= 0");
  }
  if (config.job.max_iterations < 0) problems->push_back("--max-iterations must not be negative");
  if (!(config.job.max_seconds >= 0) || !std::isfinite(config.job.max_seconds)) {
    problems->push_back("--max-seconds must not be negative");
  }
  if (config.job.eval_every < 1) problems->push_back("--eval-every must be at least 1");
}

// What --checkpoint and --checkpoint-every rule out.
void AddCheckpointProblems(const ServerConfig& config, std::vector<std::string>* problems) {
  if (config.checkpoint_every_iterations < 0 || !(config.checkpoint_every_seconds >= 0) ||
      !std::isfinite(config.checkpoint_every_seconds)) {
    problems->push_back("--checkpoint-every must not be negative");
  }
  const bool every = config.checkpoint_every_iterations > 0 || config.checkpoint_every_seconds > 0;
  if (config.shard_index > 0) {
    // Shards beyond 0 checkpoint when shard 0 orders: all at one version.
    if (every) {
      problems->push_back("--checkpoint-every is for shard 0; the other shards checkpoint with it");
    }
  } else if (!config.checkpoint.empty() && !every) {
    problems->push_back("--checkpoint needs --checkpoint-every N (iterations) or Ts (seconds)");
  } else if (config.checkpoint.empty() && every) {
    problems->push_back("--checkpoint-every needs --checkpoint FILE");
  }
}

// What --shard, --coordinator and --advertise rule out.
void AddShardProblems(const ServerConfig& config, std::vector<std::string>* problems) {
  if (config.shard_count < 1 || config.shard_count > kMaxShards || config.shard_index < 0 ||
      config.shard_index >= config.shard_count) {
    problems->push_back("--shard I/S needs 0 <= I < S <= " + std::to_string(kMaxShards));
  } else if (config.shard_index > 0 && config.coordinator.empty()) {
    problems->push_back("--coordinator must not be empty (the address of shard 0)");
  } else if (config.shard_index == 0 && !config.coordinator.empty()) {
    problems->push_back("--coordinator is for shards 1 and up; shard 0 is the coordinator");
  }
  if (config.shard_index == 0 && !config.advertise.empty()) {
    problems->push_back("--advertise is for shards 1 and up (workers reach shard 0 at --bind)");
  }
  if (config.shard_count > 1 && sync::UsesOuterOptimizer(config.policy)) {
    // Shards beyond 0 would need the outer optimizer's settings: not there yet.
    problems->push_back("--policy " + config.policy.name +
                        " does not work with sharded servers (--shard) yet");
  }
}

// The pushes a round's update keeps under config's policy (sync::PushesKept).
int64_t KeptPerRound(const ServerConfig& config) {
  return sync::PushesKept(sync::WithJob(config.policy, config.job));
}

// What --aggregate and --max-update-norm rule out.
void AddAggregationProblems(const ServerConfig& config, std::vector<std::string>* problems) {
  if (Result<Aggregation> rule = ParseAggregation(config.aggregate); !rule.ok()) {
    problems->push_back("--aggregate: " + rule.status().message());
  } else if (rule->robust() && !AggregatesRounds(config.policy.name)) {
    problems->push_back("--aggregate " + config.aggregate +
                        " needs a policy that aggregates rounds (" +
                        sync::PoliciesWith(&sync::PolicyTraits::aggregates_rounds) + "), not " +
                        config.policy.name);
  } else if (const int64_t kept = KeptPerRound(config);
             rule->robust() && kept >= 1 && kept < config.job.workers && kept < 3) {
    // The pushes kept are the first to arrive: a worker that answers at
    // once is always among them, and of 2 the rule cannot tell who is off.
    // Backup workers are the policy that keeps fewer than all.
    problems->push_back("--aggregate " + config.aggregate + " with --backup " +
                        std::to_string(config.policy.backup) + " of --workers " +
                        std::to_string(config.job.workers) + " keeps only the first " +
                        std::to_string(kept) + " push" + (kept == 1 ? "" : "es") +
                        " to arrive each round: a robust rule needs 3 or more (--workers minus "
                        "--backup)");
  }
  if (CenteredClipping(config) && (config.optimizer.algorithm != "sgd" ||
                                   config.optimizer.nesterov || config.optimizer.dampening != 0)) {
    problems->push_back("--aggregate " + config.aggregate +
                        " keeps --momentum per worker as plain SGD momentum: it needs --optimizer "
                        "sgd, without --nesterov or --dampening");
  }
  if (!(config.max_update_norm >= 0)) problems->push_back("--max-update-norm must not be negative");
  if (config.shard_count > 1 && (config.aggregate != "mean" || config.max_update_norm > 0)) {
    // Both need every push whole, which sharded servers split.
    problems->push_back("--aggregate and --max-update-norm do not work with sharded servers");
  }
}

// What --push-codec and --pull-codec rule out: a spelling ParseCodec does
// not read, and the setups whose payloads the codecs do not reach yet,
// which would otherwise go dense unannounced.
void AddCodecProblems(const ServerConfig& config, std::vector<std::string>* problems) {
  bool any = false;
  for (const auto& [flag, value] : {std::pair{"--push-codec", &config.push_codec},
                                    std::pair{"--pull-codec", &config.pull_codec}}) {
    Result<compress::Codec> codec = compress::ParseCodec(*value);
    if (!codec.ok()) {
      problems->push_back(std::string(flag) + ": " + codec.status().message());
    } else if (codec->kind != compress::Kind::kNone) {
      any = true;
    }
  }
  if (!any) return;
  if (config.shard_count > 1) {
    problems->push_back("--push-codec and --pull-codec do not work with sharded servers yet");
  }
  if (config.job.model == kExternalModel) {
    problems->push_back("--push-codec and --pull-codec do not work with --model external yet");
  }
}

}  // namespace

optim::OptimizerSettings ServerOptimizerSettings(const ServerConfig& config) {
  optim::OptimizerSettings settings = config.optimizer;
  const sync::ServerOptimizer step =
      sync::ServerOptimizerFor(config.policy, config.job.lr, config.job.momentum);
  settings.lr = step.lr;
  // --momentum is SGD's; Adam's moments are --betas.
  settings.momentum =
      settings.algorithm == "sgd" || sync::UsesOuterOptimizer(config.policy) ? step.momentum : 0;
  settings.nesterov = settings.nesterov || step.nesterov;
  settings.momentum_every = step.momentum_every;
  if (CenteredClipping(config)) settings.momentum = 0;  // kept per worker instead, by the rule
  return settings;
}

std::vector<std::string> ValidateConfig(const ServerConfig& config) {
  std::vector<std::string> problems;
  if (config.job.workers < 1) problems.push_back("--workers must be at least 1");
  if (config.job.batch < 1) problems.push_back("--batch must be at least 1");
  if (!(config.job.lr > 0) || !std::isfinite(config.job.lr))
    problems.push_back("--lr must be positive");
  if (!(config.job.momentum >= 0 && config.job.momentum < 1)) {
    problems.push_back("--momentum must be in [0, 1)");
  }
  AddOptimizerProblems(config, &problems);
  if (config.threads < 1 || config.threads > 256)
    problems.push_back("--threads must be in [1, 256]");
  AddStoppingProblems(config, &problems);
  if (config.heartbeat.count() < 1) problems.push_back("--heartbeat-ms must be at least 1");
  if (config.worker_timeout <= config.heartbeat) {
    problems.push_back("--worker-timeout must be longer than --heartbeat-ms");
  }
  if (config.min_workers < 0 || config.min_workers > config.job.workers) {
    problems.push_back("--min-workers must be in [0, --workers]");
  }
  AddCheckpointProblems(config, &problems);
  if (config.policy.staleness < 0) problems.push_back("--staleness must not be negative");
  if (config.curve_secret.empty() != config.curve_allow.empty()) {
    problems.push_back(
        "--curve-secret and --curve-allow go together (CURVE admits only the listed workers)");
  }
  if (config.max_message_bytes < 0) problems.push_back("--max-message-bytes must not be negative");
  if (config.max_connections < 0) problems.push_back("--max-connections must not be negative");
  if (config.max_connections > 0 && config.max_connections < config.job.workers) {
    problems.push_back("--max-connections must be at least --workers");
  }
  AddShardProblems(config, &problems);
  AddAggregationProblems(config, &problems);
  AddCodecProblems(config, &problems);
  sync::PolicyConfig probe = sync::WithJob(config.policy, config.job);
  probe.job.workers = std::max<int64_t>(config.job.workers, 1);
  probe.job.batch = std::max<int64_t>(config.job.batch, 1);
  if (Status s = sync::CheckPolicy(probe); !s.ok()) problems.push_back("--policy: " + s.message());
  if (Result<data::DataSpec> d = data::ParseDataSpec(config.job.data); !d.ok()) {
    problems.push_back("--data: " + d.status().message());
  }
  // 16 inputs, a 4x4 image, fit every kind of model; the data's own shape is
  // checked once it is loaded.
  if (config.job.model == kExternalModel) {
    AddExternalProblems(config, &problems);
  } else if (Result<model::ModelSpec> m = model::ParseModelSpec(config.job.model, 16, 2); !m.ok()) {
    problems.push_back("--model: " + m.status().message());
  }
  if (config.evaluator_timeout.count() < 1) {
    problems.push_back("--evaluator-timeout must be positive");
  }
  AddRoleProblems(config, &problems);
  return problems;
}

}  // namespace dmlps::server
