// dmlps-server: holds the model and runs a synchronization policy for a
// cluster of dmlps-worker processes.
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "dmlps/cli/cli.h"
#include "dmlps/cli/flags.h"
#include "dmlps/cli/policy_flags.h"
#include "dmlps/cli/policy_list.h"
#include "dmlps/cli/programs.h"
#include "dmlps/cli/values.h"
#include "dmlps/launch/launch.h"
#include "dmlps/net/secret.h"
#include "dmlps/server/server.h"
#include "dmlps/sync/registry.h"

namespace dmlps::server_cli {
namespace {

using server::ServerConfig;

void AddClusterOptions(cxxopts::Options& options, const launch::LaunchDefaults& launch,
                       const ServerConfig& defaults) {
  cli::AddFlags(
      options, "Cluster",
      {{"bind",
        "Address to listen on (tcp://HOST:PORT, tcp://HOST:* for any port, ipc://PATH; the "
        "port defaults to $DMLPS_PORT)",
        "ADDR", launch.bind},
       {"endpoint-file", "Write the address actually bound to FILE once listening", "FILE", ""},
       {"workers",
        "Number of workers; training starts when all have joined (under torchrun, mpirun, "
        "srun, PMI or an indexed Job: the job's size - 1)",
        "N", std::to_string(launch.workers > 0 ? launch.workers : defaults.job.workers)},
       {"policy", "Synchronization policy: " + sync::PolicyNames(), "NAME", defaults.policy.name},
       {"shard",
        "Hold slice I of S of the parameters; shard 0 runs the policy, the others take "
        "their orders from it (see --coordinator)",
        "I/S", "0/1"},
       {"coordinator",
        "Shards 1 and up: the address of shard 0 (its --bind), by default where "
        "dmlps-worker finds the server ($DMLPS_SERVER, Slurm's first node, or 127.0.0.1, at "
        "$DMLPS_PORT); the model, data and policy flags are shard 0's",
        "ADDR", launch.server},
       {"advertise",
        "Shards 1 and up: the address workers reach this shard at (default: the bound "
        "one)",
        "ADDR"}});
  cli::AddFlags(
      options, "Fault tolerance",
      {{"heartbeat-ms", "Milliseconds between heartbeats to the workers", "MS",
        std::to_string(defaults.heartbeat.count())},
       {"worker-timeout", "Declare a worker silent for SECONDS lost and go on without it",
        "SECONDS", "30"},
       {"min-workers", "Hold training while fewer than N workers are live", "N",
        std::to_string(defaults.min_workers)},
       {"checkpoint", "Write checkpoints to FILE (atomically; see --checkpoint-every)", "FILE"},
       {"checkpoint-every", "Checkpoint every N iterations, or every T seconds with Ts (e.g. 30s)",
        "N|Ts"},
       {"resume", "Go on from the checkpoint in FILE; workers reconnect on their own", "FILE"},
       {"initial",
        "--model external: start from the layout and values in the checkpoint FILE "
        "(dmlps.torch.save_initial writes one from a module), so that no peer chooses them",
        "FILE"},
       {"resume-max-value",
        "Refuse to resume a checkpoint holding a value beyond +-V, which cannot train (0: no "
        "bound)",
        "V", "1e12"},
       {"rejoin-timeout",
        "Shard 0: after going back to the last checkpoint (a shard lost), end the run when "
        "the shards and workers are not all back within SECONDS",
        "SECONDS", "300"}});
}

void AddOptimizerOptions(cxxopts::Options& options, const optim::OptimizerSettings& defaults) {
  cli::AddFlags(
      options, "Optimizer",
      {{"optimizer", "The server's update rule: sgd, adam or adamw", "RULE", defaults.algorithm},
       {"nesterov", "sgd: Nesterov momentum"},
       {"dampening", "sgd: dampening of the momentum", "D", fmt::format("{}", defaults.dampening)},
       {"weight-decay",
        "L2 penalty (sgd, adam: added to the gradient; adamw: decoupled, theta *= 1 - lr wd); "
        "default 0, adamw's 0.01 as torch.optim.AdamW's",
        "WD"},
       {"betas", "adam, adamw: the moments' decay rates", "B1,B2",
        fmt::format("{},{}", defaults.beta1, defaults.beta2)},
       {"eps", "adam, adamw: added to the denominator", "EPS", fmt::format("{}", defaults.eps)},
       {"param-group",
        "Parameter groups, first match wins: 'PATTERN[|PATTERN]:key=value[:key=value][;...]', "
        "PATTERN a glob on tensor names, keys lr and weight_decay (e.g. "
        "'*.bias|*norm*:weight_decay=0')",
        "GROUPS"},
       {"clip-grad-norm", "Scale each step's gradient to this L2 norm over the model (0: never)",
        "NORM", "0"},
       {"lr-schedule",
        "Learning-rate schedule per server step: constant, step:S:G, multistep:M1,M2,..:G, "
        "cosine:T[:F] or linear:T[:F]",
        "SPEC", defaults.schedule},
       {"warmup", "Steps of linear warmup before the schedule", "N", "0"}});
}

void AddRunOptions(cxxopts::Options& options, const ServerConfig& defaults) {
  cli::AddTrainingOptions(options, "Training", defaults.job, /*external_model=*/true);
  cli::AddFlags(options, "Training",
                {{"seed", "Seed for the initial model and the workers' sampling", "N",
                  std::to_string(defaults.job.seed)},
                 {"threads", "Threads that sum pushes and apply updates (1..256)", "N",
                  std::to_string(defaults.threads)},
                 {"push-codec",
                  "Encode every worker's push: none, fp16, bf16, int8 (scaled per 256 floats) or "
                  "topk:F (the largest F of the coordinates), with error feedback",
                  "CODEC", defaults.push_codec},
                 {"pull-codec",
                  "Send each model after a worker's first as its change since that worker's last, "
                  "encoded: none, fp16, bf16, int8 or topk:F",
                  "CODEC", defaults.pull_codec}});
  AddOptimizerOptions(options, defaults.optimizer);
  cli::AddFlags(
      options, "Stopping and evaluation",
      {{"target-accuracy", "Stop when test accuracy reaches this; exit 1 if never (0: no target)",
        "ACC", "0"},
       {"target-loss",
        "Stop when the mean test loss is at most this (with --target-accuracy: both); exit 1 "
        "if never (0: no target)",
        "LOSS", "0"},
       {"max-iterations", "Stop after this many iterations (0: no limit)", "N", "0"},
       {"max-seconds", "Stop after this many seconds of training (0: no limit)", "SECONDS", "0"},
       {"eval-every", "Iterations between evaluations on the test set", "N",
        std::to_string(defaults.job.eval_every)},
       {"evaluator",
        "Send snapshots to an evaluator process (dmlps-worker --evaluator) instead of "
        "evaluating them here; training starts once it has joined"},
       {"evaluator-timeout",
        "With --evaluator: go on without an evaluator that has not answered a snapshot "
        "within SECONDS",
        "SECONDS", "60"},
       {"report", "At the end, write the run's figures to FILE as key<TAB>value lines", "FILE"},
       {"save-model",
        "At the end, write the parameters this server holds to FILE as raw "
        "little-endian float32 (a shard: its slice)",
        "FILE"},
       {"deterministic",
        "Sum each update's gradients in rank order, not as they arrive: the same "
        "model bit for bit on every run (and any number of shards)"}});
  cli::AddFlags(
      options, "Security and limits",
      {{"curve-secret",
        "Encrypt and authenticate with CURVE: the server's secret key FILE (from "
        "dmlps-keygen; needs --curve-allow)",
        "FILE"},
       {"secret",
        "The job secret FILE (dmlps-keygen --secret FILE; default $DMLPS_SECRET_FILE): the "
        "evaluator, the worker announcing an external model and, without CURVE, the other "
        "shards must present it",
        "FILE"},
       {"curve-allow", "Admit only workers whose public key is in a *.pub file in DIR", "DIR"},
       {"max-message-bytes", "Refuse messages larger than BYTES (0: the model's size plus 1 MiB)",
        "BYTES", "0"},
       {"max-connections", "Refuse connections beyond N open at once (0: --workers plus 16)", "N",
        "0"},
       {"max-features",
        "Refuse data declaring more features than N (a LIBSVM index, IDX pixels per image), "
        "exit 65",
        "N", std::to_string(defaults.max_features)},
       {"aggregate",
        "How a round's pushes make the update: mean (weighted by samples), median or "
        "trimmed-mean:F (per coordinate; F of the values at each end left out), or "
        "cclip:TAU[:ITERS] (centred clipping of each worker's --momentum to radius TAU, or auto: "
        "mixed with the nearest ones and a radius the round sets; ITERS "
        "steps a round, default 10); the robust rules need a policy that aggregates rounds "
        "(bsp, abps, lbbsp, token, backup keeping 3 or more pushes)",
        "RULE", defaults.aggregate},
       {"max-update-norm", "Scale each push down to this L2 norm before it is used (0: no bound)",
        "NORM", "0"}});
}

// The reads below keep the order of the flags' messages: cluster and job,
// fault tolerance, sharding, policy settings, limits.
void ReadJob(cli::FlagReader& flags, ServerConfig* config) {
  config->bind = flags.String("bind");
  config->endpoint_file = flags.String("endpoint-file");
  config->job.workers = flags.Int("workers", 1, 100000);
  config->policy.name = flags.String("policy");
  cli::ReadTrainingOptions(flags, &config->job);
  config->job.seed = static_cast<uint64_t>(flags.Int("seed", 0));
  config->threads = flags.Int("threads", 1, 256);
  config->push_codec = flags.String("push-codec");
  config->pull_codec = flags.String("pull-codec");
  config->job.target_accuracy = flags.Real("target-accuracy", 0, 1);
  config->job.target_loss = flags.Real("target-loss", 0, 1e30);
  config->job.max_iterations = flags.Int("max-iterations", 0);
  config->job.max_seconds = flags.Real("max-seconds", 0);
  config->job.eval_every = flags.Int("eval-every", 1);
  config->remote_evaluator = flags.Has("evaluator");
  config->evaluator_timeout = std::chrono::milliseconds(
      static_cast<int64_t>(flags.Real("evaluator-timeout", 0.001, 1e6) * 1000));
}

void ReadFaultTolerance(cli::FlagReader& flags, ServerConfig* config) {
  config->heartbeat = std::chrono::milliseconds(flags.Int("heartbeat-ms", 1, 3600000));
  config->worker_timeout = std::chrono::milliseconds(
      static_cast<int64_t>(flags.Real("worker-timeout", 0.001, 1e6) * 1000));
  config->min_workers = flags.Int("min-workers", 0, 100000);
  if (flags.Has("checkpoint")) config->checkpoint = flags.String("checkpoint");
  if (flags.Has("resume")) config->resume = flags.String("resume");
  if (flags.Has("initial")) config->initial = flags.String("initial");
  config->resume_max_value = flags.Real("resume-max-value", 0, 3.4e38);
  config->rejoin_timeout = std::chrono::milliseconds(
      static_cast<int64_t>(flags.Real("rejoin-timeout", 0.001, 1e6) * 1000));
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

void ReadOptimizer(cli::FlagReader& flags, optim::OptimizerSettings* settings) {
  settings->algorithm = flags.String("optimizer");
  if (settings->algorithm != "sgd" && flags.Has("momentum")) {
    flags.AddProblem("--momentum is sgd's; --optimizer " + settings->algorithm + " takes --betas");
  }
  settings->nesterov = flags.Has("nesterov");
  settings->dampening = flags.Real("dampening", 0, 1);
  // AdamW's default is torch.optim.AdamW's.
  settings->weight_decay = flags.Has("weight-decay")        ? flags.Real("weight-decay", 0, 1e6)
                           : settings->algorithm == "adamw" ? 0.01
                                                            : 0;
  const std::string betas = flags.String("betas");
  const size_t comma = betas.find(',');
  char* end = nullptr;
  settings->beta1 = std::strtod(betas.c_str(), &end);
  const bool first_read = comma != std::string::npos && end == betas.c_str() + comma;
  settings->beta2 = first_read ? std::strtod(betas.c_str() + comma + 1, &end) : 0;
  if (!first_read || *end != '\0' || comma + 1 == betas.size()) {
    flags.AddProblem("--betas must be two numbers B1,B2 in [0, 1), not '" + betas + "'");
  }
  settings->eps = flags.Real("eps", 1e-30, 1);
  if (flags.Has("param-group")) {
    const std::string groups = flags.String("param-group");
    if (groups.empty()) flags.AddProblem("--param-group: no group given");
    settings->groups = cli::SplitList(groups, ';');
  }
  settings->clip_norm = flags.Real("clip-grad-norm", 0, 1e30);
  settings->schedule = flags.String("lr-schedule");
  settings->warmup = flags.Int("warmup", 0, int64_t{1} << 40);
}

void ReadLimits(cli::FlagReader& flags, ServerConfig* config) {
  if (flags.Has("curve-secret")) config->curve_secret = flags.String("curve-secret");
  if (flags.Has("curve-allow")) config->curve_allow = flags.String("curve-allow");
  config->secret_file = net::SecretFilePath(flags.Has("secret") ? flags.String("secret") : "");
  config->max_message_bytes = flags.Int("max-message-bytes", 0, int64_t{1} << 40);
  config->max_connections = flags.Int("max-connections", 0, 1000000);
  config->max_features = flags.Int("max-features", 1, std::numeric_limits<int32_t>::max());
  config->aggregate = flags.String("aggregate");
  config->max_update_norm = flags.Real("max-update-norm", 0, 1e30);
}

// Declares every flag; under a launcher, --workers and the addresses
// default to what `launch` says.
void AddServerOptions(cxxopts::Options& options, const launch::LaunchDefaults& launch) {
  const ServerConfig defaults;
  AddClusterOptions(options, launch, defaults);
  cli::AddListPoliciesFlag(options, "Policy", cli::PolicyList::kServer);
  cli::AddPolicyFlags(options, defaults.policy);
  AddRunOptions(options, defaults);
  cli::AddCommonOptions(options, /*with_trace=*/true);
}

// Reads the flags into a config, checked whole: every problem (the
// launcher's too) collects in `flags`, in the order of the flags. Returns
// the program that serves under that config.
cli::Program ReadServerFlags(cli::FlagReader& flags, const launch::LaunchDefaults& launch) {
  // A question about the program, answered before any other flag counts.
  if (flags.Has("list-policies")) return cli::ListPoliciesProgram(cli::PolicyList::kServer);
  ServerConfig config;
  ReadJob(flags, &config);
  ReadFaultTolerance(flags, &config);
  ReadSharding(flags, &config);
  ReadLimits(flags, &config);
  ReadOptimizer(flags, &config.optimizer);
  cli::ReadPolicyFlags(flags, &config.policy);
  flags.AddProblems(launch.problems);
  flags.AddProblems(server::ValidateConfig(config));
  return [config, launcher = launch.launcher] { return cli::RunServerProgram(config, launcher); };
}

}  // namespace
}  // namespace dmlps::server_cli

int main(int argc, char** argv) {
  // Under mpirun, srun or a PMI launcher, rank 0 serves the other SIZE-1.
  return dmlps::cli::RunLaunchedMain(
      {dmlps::cli::kServerProgram,
       "Parameter server: holds the model, runs a synchronization policy\n"
       "over its workers, evaluates on the test set. One TSV line per\n"
       "evaluation on stdout (seconds, iteration, accuracy, loss).\n",
       {"Cluster", "Fault tolerance", "Policy", "Training", "Optimizer", "Stopping and evaluation",
        "Security and limits", "Common"},
       dmlps::server_cli::AddServerOptions,
       dmlps::server_cli::ReadServerFlags},
      argc, argv);
}
