#include "cmd/dmlps-server/options.h"

#include <string>
#include <utility>

#include "dmlps/cli/flags.h"
#include "dmlps/cli/values.h"
#include "dmlps/predict/predictor.h"

namespace dmlps::server_cli {
namespace {

using server::ServerConfig;

void AddClusterOptions(cxxopts::Options& options, const launch::LaunchDefaults& launch,
                       const ServerConfig& defaults) {
  options.add_options("Cluster")
      ("bind", "Address to listen on (tcp://HOST:PORT, tcp://HOST:* for any port, ipc://PATH; "
       "the port defaults to $DMLPS_PORT)", cxxopts::value<std::string>()->default_value(launch.bind),
       "ADDR")
      ("endpoint-file", "Write the address actually bound to FILE once listening",
       cxxopts::value<std::string>()->default_value(""), "FILE")
      ("workers", "Number of workers; training starts when all have joined (under mpirun, srun "
       "or PMI: the job's size - 1)", cxxopts::value<std::string>()->default_value(
           std::to_string(launch.workers > 0 ? launch.workers : defaults.workers)), "N")
      ("policy", "Synchronization policy: bsp, asp, ssp, backup, wbsp, wbsp-overlap, abps, lbbsp, "
       "token", cxxopts::value<std::string>()->default_value(defaults.policy.name), "NAME")
      ("shard", "Hold slice I of S of the parameters; shard 0 runs the policy, the others take "
       "their orders from it (see --coordinator)", cxxopts::value<std::string>()->default_value("0/1"),
       "I/S")
      ("coordinator", "Shards 1 and up: the address of shard 0 (its --bind), by default where "
       "dmlps-worker finds the server ($DMLPS_SERVER, Slurm's first node, or 127.0.0.1, at "
       "$DMLPS_PORT); the model, data and policy flags are shard 0's",
       cxxopts::value<std::string>()->default_value(launch.server), "ADDR")
      ("advertise", "Shards 1 and up: the address workers reach this shard at (default: the bound "
       "one)", cxxopts::value<std::string>(), "ADDR");
  options.add_options("Fault tolerance")
      ("heartbeat-ms", "Milliseconds between heartbeats to the workers",
       cxxopts::value<std::string>()->default_value(std::to_string(defaults.heartbeat.count())), "MS")
      ("worker-timeout", "Declare a worker silent for SECONDS lost and go on without it",
       cxxopts::value<std::string>()->default_value("30"), "SECONDS")
      ("min-workers", "Hold training while fewer than N workers are live",
       cxxopts::value<std::string>()->default_value(std::to_string(defaults.min_workers)), "N")
      ("checkpoint", "Write checkpoints to FILE (atomically; see --checkpoint-every)",
       cxxopts::value<std::string>(), "FILE")
      ("checkpoint-every", "Checkpoint every N iterations, or every T seconds with Ts (e.g. 30s)",
       cxxopts::value<std::string>(), "N|Ts")
      ("resume", "Go on from the checkpoint in FILE; workers reconnect on their own",
       cxxopts::value<std::string>(), "FILE");
}

void AddPolicyOptions(cxxopts::Options& options, const sync::PolicyConfig& defaults) {
  options.add_options("Policy")
      ("staleness", "ssp: clocks a worker may run ahead of the slowest",
       cxxopts::value<std::string>()->default_value(std::to_string(defaults.staleness)), "S")
      ("backup", "backup: pushes per iteration not waited for",
       cxxopts::value<std::string>()->default_value(std::to_string(defaults.backup)), "B")
      ("chunk", "abps: samples per chunk; workers look for SyncNow between chunks",
       cxxopts::value<std::string>()->default_value(std::to_string(defaults.chunk)), "N")
      ("rebalance-every", "lbbsp: iterations between batch-size changes",
       cxxopts::value<std::string>()->default_value(std::to_string(defaults.rebalance_every)), "N")
      ("lb-mode", "lbbsp: cpu (batch proportional to predicted speed) or gpu (numerical)",
       cxxopts::value<std::string>()->default_value(defaults.lb_mode), "MODE")
      ("predictor", "lbbsp cpu: speed predictor, last, ema, arima or narx",
       cxxopts::value<std::string>()->default_value(defaults.predictor), "NAME")
      ("ema-alpha", "lbbsp with --predictor ema: weight of the newest speed",
       cxxopts::value<std::string>()->default_value("0.5"), "A")
      ("arima-order", "lbbsp with --predictor arima: the order P,D,Q",
       cxxopts::value<std::string>()->default_value(
           cli::FormatArimaOrder(defaults.arima_p, defaults.arima_d, defaults.arima_q)),
       "P,D,Q")
      ("lb-step", "lbbsp gpu: samples moved per rebalance at first (0: B/(4N))",
       cxxopts::value<std::string>()->default_value("0"), "N")
      ("token-size", "token: samples per token",
       cxxopts::value<std::string>()->default_value(std::to_string(defaults.token_size)), "N");
}

void AddRunOptions(cxxopts::Options& options, const ServerConfig& defaults) {
  cli::AddTrainingOptions(options, "Training",
                          {defaults.model, defaults.data, defaults.batch, defaults.lr,
                           defaults.momentum});
  options.add_options("Training")
      ("seed", "Seed for the initial model and the workers' sampling",
       cxxopts::value<std::string>()->default_value(std::to_string(defaults.seed)), "N")
      ("threads", "Threads that sum pushes and apply updates (1..256)",
       cxxopts::value<std::string>()->default_value(std::to_string(defaults.threads)), "N");
  options.add_options("Stopping and evaluation")
      ("target-accuracy", "Stop when test accuracy reaches this; exit 1 if never (0: no target)",
       cxxopts::value<std::string>()->default_value("0"), "ACC")
      ("max-iterations", "Stop after this many iterations (0: no limit)",
       cxxopts::value<std::string>()->default_value("0"), "N")
      ("max-seconds", "Stop after this many seconds of training (0: no limit)",
       cxxopts::value<std::string>()->default_value("0"), "SECONDS")
      ("eval-every", "Iterations between evaluations on the test set",
       cxxopts::value<std::string>()->default_value(std::to_string(defaults.eval_every)), "N")
      ("report", "At the end, write the run's figures to FILE as key<TAB>value lines",
       cxxopts::value<std::string>(), "FILE")
      ("save-model", "At the end, write the parameters this server holds to FILE as raw "
       "little-endian float32 (a shard: its slice)", cxxopts::value<std::string>(), "FILE")
      ("deterministic", "Sum each update's gradients in rank order, not as they arrive: the same "
       "model bit for bit on every run (and any number of shards)");
  options.add_options("Security and limits")
      ("curve-secret", "Encrypt and authenticate with CURVE: the server's secret key FILE "
       "(from dmlps-keygen; needs --curve-allow)", cxxopts::value<std::string>(), "FILE")
      ("curve-allow", "Admit only workers whose public key is in a *.pub file in DIR",
       cxxopts::value<std::string>(), "DIR")
      ("max-message-bytes", "Refuse messages larger than BYTES (0: the model's size plus 1 MiB)",
       cxxopts::value<std::string>()->default_value("0"), "BYTES")
      ("max-connections", "Refuse connections beyond N open at once (0: --workers plus 16)",
       cxxopts::value<std::string>()->default_value("0"), "N");
}

// The reads below keep the order of the flags' messages: cluster and job,
// fault tolerance, sharding, policy settings, limits.
void ReadJob(cli::FlagReader& flags, ServerConfig* config) {
  config->bind = flags.String("bind");
  config->endpoint_file = flags.String("endpoint-file");
  config->workers = flags.Int("workers", 1, 100000);
  config->policy.name = flags.String("policy");
  config->policy.staleness = flags.Int("staleness", 0, 1000000);
  const cli::TrainingFlags training = cli::ReadTrainingOptions(flags);
  config->model = training.model;
  config->data = training.data;
  config->batch = training.batch;
  config->lr = training.lr;
  config->momentum = training.momentum;
  config->seed = static_cast<uint64_t>(flags.Int("seed", 0));
  config->threads = flags.Int("threads", 1, 256);
  config->target_accuracy = flags.Real("target-accuracy", 0, 1);
  config->max_iterations = flags.Int("max-iterations", 0);
  config->max_seconds = flags.Real("max-seconds", 0);
  config->eval_every = flags.Int("eval-every", 1);
}

void ReadFaultTolerance(cli::FlagReader& flags, ServerConfig* config) {
  config->heartbeat = std::chrono::milliseconds(flags.Int("heartbeat-ms", 1, 3600000));
  config->worker_timeout = std::chrono::milliseconds(
      static_cast<int64_t>(flags.Real("worker-timeout", 0.001, 1e6) * 1000));
  config->min_workers = flags.Int("min-workers", 0, 100000);
  if (flags.Has("checkpoint")) config->checkpoint = flags.String("checkpoint");
  if (flags.Has("resume")) config->resume = flags.String("resume");
  if (flags.Has("checkpoint-every")) {
    if (auto every = cli::ParseCheckpointEvery(flags.String("checkpoint-every")); every.ok()) {
      config->checkpoint_every_iterations = every->iterations;
      config->checkpoint_every_seconds = every->seconds;
    } else {
      flags.AddProblem("--checkpoint-every: " + every.status().message());
    }
  }
  if (flags.Has("trace")) config->trace = flags.String("trace");
  if (flags.Has("save-model")) config->save_model = flags.String("save-model");
  config->deterministic = flags.Has("deterministic");
}

void ReadSharding(cli::FlagReader& flags, ServerConfig* config) {
  if (auto shard = cli::ParseShard(flags.String("shard")); shard.ok()) {
    config->shard_index = shard->index;
    config->shard_count = shard->count;
  } else {
    flags.AddProblem("--shard: " + shard.status().message());
  }
  if (config->shard_index > 0 || flags.Has("coordinator")) {
    config->coordinator = flags.String("coordinator");
  }
  if (flags.Has("advertise")) config->advertise = flags.String("advertise");
  if (flags.Has("report")) config->report = flags.String("report");
}

void ReadPolicySettings(cli::FlagReader& flags, sync::PolicyConfig* policy) {
  policy->backup = flags.Int("backup", 0, 100000);
  policy->chunk = flags.Int("chunk", 1, 1 << 24);
  policy->rebalance_every = flags.Int("rebalance-every", 1, 1 << 30);
  policy->lb_mode = flags.String("lb-mode");
  policy->predictor = flags.String("predictor");
  policy->ema_alpha = flags.Real("ema-alpha", 1e-9, 1);
  predict::PredictorOptions order;
  if (Status s = predict::ParseArimaOrder(flags.String("arima-order"), &order); s.ok()) {
    policy->arima_p = order.arima_p;
    policy->arima_d = order.arima_d;
    policy->arima_q = order.arima_q;
  } else {
    flags.AddProblem("--arima-order: " + s.message());
  }
  if (flags.Has("arima-order") && policy->predictor != "arima") {
    flags.AddProblem("--arima-order applies only to --predictor arima");
  }
}

void ReadLimits(cli::FlagReader& flags, ServerConfig* config) {
  if (flags.Has("curve-secret")) config->curve_secret = flags.String("curve-secret");
  if (flags.Has("curve-allow")) config->curve_allow = flags.String("curve-allow");
  config->max_message_bytes = flags.Int("max-message-bytes", 0, int64_t{1} << 40);
  config->max_connections = flags.Int("max-connections", 0, 1000000);
}

// A policy flag given for another policy is a mistake worth saying.
void RefuseOtherPoliciesFlags(cli::FlagReader& flags, const std::string& policy_name) {
  const std::pair<const char*, const char*> policy_flags[] = {
      {"staleness", "ssp"},       {"backup", "backup"},   {"chunk", "abps"},
      {"rebalance-every", "lbbsp"}, {"lb-mode", "lbbsp"}, {"predictor", "lbbsp"},
      {"ema-alpha", "lbbsp"},     {"arima-order", "lbbsp"}, {"lb-step", "lbbsp"},
      {"token-size", "token"}};
  for (const auto& [flag, policy] : policy_flags) {
    if (flags.Has(flag) && policy_name != policy) {
      flags.AddProblem(std::string("--") + flag + " applies only to --policy " + policy);
    }
  }
}

}  // namespace

const std::vector<std::string>& HelpGroups() {
  static const std::vector<std::string> kGroups = {
      "Cluster", "Fault tolerance", "Policy", "Training", "Stopping and evaluation",
      "Security and limits", "Common"};
  return kGroups;
}

void AddServerOptions(cxxopts::Options& options, const launch::LaunchDefaults& launch) {
  const ServerConfig defaults;
  AddClusterOptions(options, launch, defaults);
  AddPolicyOptions(options, defaults.policy);
  AddRunOptions(options, defaults);
  cli::AddCommonOptions(options, /*with_trace=*/true);
}

ServerConfig ReadServerConfig(cli::FlagReader& flags, const launch::LaunchDefaults& launch) {
  ServerConfig config;
  ReadJob(flags, &config);
  ReadFaultTolerance(flags, &config);
  ReadSharding(flags, &config);
  ReadPolicySettings(flags, &config.policy);
  ReadLimits(flags, &config);
  config.policy.lb_step = flags.Int("lb-step", 0, 1 << 24);
  config.policy.token_size = flags.Int("token-size", 1, 1 << 24);
  RefuseOtherPoliciesFlags(flags, config.policy.name);
  flags.AddProblems(launch.problems);
  flags.AddProblems(server::ValidateConfig(config));
  return config;
}

}  // namespace dmlps::server_cli
