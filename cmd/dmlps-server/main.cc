// dmlps-server: holds the model and runs a synchronization policy for a
// cluster of dmlps-worker processes.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include <spdlog/spdlog.h>

#include "dmlps/base/file.h"
#include "dmlps/cli/cli.h"
#include "dmlps/launch/launch.h"
#include "dmlps/predict/predictor.h"
#include "dmlps/server/server.h"

int main(int argc, char** argv) {
  using dmlps::server::ServerConfig;
  const ServerConfig defaults;
  // Under mpirun, srun or a PMI launcher, rank 0 serves the other SIZE-1.
  const dmlps::launch::LaunchDefaults launch = dmlps::launch::ReadLaunchDefaults();
  cxxopts::Options options("dmlps-server",
                           "Parameter server: holds the model, runs a synchronization policy\n"
                           "over its workers, evaluates on the test set. One TSV line per\n"
                           "evaluation on stdout (seconds, iteration, accuracy, loss).\n");
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
  options.add_options("Policy")
      ("staleness", "ssp: clocks a worker may run ahead of the slowest",
       cxxopts::value<std::string>()->default_value(std::to_string(defaults.policy.staleness)), "S")
      ("backup", "backup: pushes per iteration not waited for",
       cxxopts::value<std::string>()->default_value(std::to_string(defaults.policy.backup)), "B")
      ("chunk", "abps: samples per chunk; workers look for SyncNow between chunks",
       cxxopts::value<std::string>()->default_value(std::to_string(defaults.policy.chunk)), "N")
      ("rebalance-every", "lbbsp: iterations between batch-size changes",
       cxxopts::value<std::string>()->default_value(std::to_string(defaults.policy.rebalance_every)), "N")
      ("lb-mode", "lbbsp: cpu (batch proportional to predicted speed) or gpu (numerical)",
       cxxopts::value<std::string>()->default_value(defaults.policy.lb_mode), "MODE")
      ("predictor", "lbbsp cpu: speed predictor, last, ema, arima or narx",
       cxxopts::value<std::string>()->default_value(defaults.policy.predictor), "NAME")
      ("ema-alpha", "lbbsp with --predictor ema: weight of the newest speed",
       cxxopts::value<std::string>()->default_value("0.5"), "A")
      ("arima-order", "lbbsp with --predictor arima: the order P,D,Q",
       cxxopts::value<std::string>()->default_value(std::to_string(defaults.policy.arima_p) + "," +
                                                    std::to_string(defaults.policy.arima_d) + "," +
                                                    std::to_string(defaults.policy.arima_q)),
       "P,D,Q")
      ("lb-step", "lbbsp gpu: samples moved per rebalance at first (0: B/(4N))",
       cxxopts::value<std::string>()->default_value("0"), "N")
      ("token-size", "token: samples per token",
       cxxopts::value<std::string>()->default_value(std::to_string(defaults.policy.token_size)), "N");
  options.add_options("Training")
      ("model", "Model: softmax, mlp:H1[,H2...] or cnn[:C1,C2,H]",
       cxxopts::value<std::string>()->default_value(defaults.model), "SPEC")
      ("data", "Dataset: fashion-mnist, fashion-mnist:DIR, idx:DIR or libsvm:FILE (test set FILE.t)",
       cxxopts::value<std::string>()->default_value(defaults.data), "SPEC")
      ("batch", "Samples per worker step",
       cxxopts::value<std::string>()->default_value(std::to_string(defaults.batch)), "B")
      ("lr", "Learning rate", cxxopts::value<std::string>()->default_value("0.05"), "RATE")
      ("momentum", "Momentum (0 for plain SGD)",
       cxxopts::value<std::string>()->default_value("0.9"), "MU")
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
  dmlps::cli::AddCommonOptions(options, /*with_trace=*/true);

  int exit_code = 0;
  std::optional<cxxopts::ParseResult> parsed = dmlps::cli::ParseArgs(
      options, {"Cluster", "Fault tolerance", "Policy", "Training", "Stopping and evaluation",
                "Security and limits", "Common"}, argc, argv, &exit_code);
  if (!parsed) return exit_code;
  dmlps::cli::FlagReader flags(*parsed);
  ServerConfig config;
  config.bind = flags.String("bind");
  config.endpoint_file = flags.String("endpoint-file");
  config.workers = flags.Int("workers", 1, 100000);
  config.policy.name = flags.String("policy");
  config.policy.staleness = flags.Int("staleness", 0, 1000000);
  config.model = flags.String("model");
  config.data = flags.String("data");
  config.batch = flags.Int("batch", 1, 1 << 24);
  config.lr = flags.Real("lr", 0, 1e6);
  config.momentum = flags.Real("momentum", 0, 1);
  config.seed = static_cast<uint64_t>(flags.Int("seed", 0));
  config.threads = flags.Int("threads", 1, 256);
  config.target_accuracy = flags.Real("target-accuracy", 0, 1);
  config.max_iterations = flags.Int("max-iterations", 0);
  config.max_seconds = flags.Real("max-seconds", 0);
  config.eval_every = flags.Int("eval-every", 1);
  config.heartbeat = std::chrono::milliseconds(flags.Int("heartbeat-ms", 1, 3600000));
  config.worker_timeout = std::chrono::milliseconds(
      static_cast<int64_t>(flags.Real("worker-timeout", 0.001, 1e6) * 1000));
  config.min_workers = flags.Int("min-workers", 0, 100000);
  if (flags.Has("checkpoint")) config.checkpoint = flags.String("checkpoint");
  if (flags.Has("resume")) config.resume = flags.String("resume");
  if (flags.Has("checkpoint-every")) {
    const std::string every = flags.String("checkpoint-every");
    const bool seconds = !every.empty() && every.back() == 's';
    const std::string number = seconds ? every.substr(0, every.size() - 1) : every;
    char* end = nullptr;
    const double value = number.empty() ? -1 : std::strtod(number.c_str(), &end);
    if (end == nullptr || *end != '\0' || !(value > 0) || !std::isfinite(value) ||
        (!seconds && (value != std::floor(value) || value > 1e12))) {
      flags.AddProblem("--checkpoint-every: '" + every +
                       "' is neither a positive whole number of iterations nor seconds like 30s");
    } else if (seconds) {
      config.checkpoint_every_seconds = value;
    } else {
      config.checkpoint_every_iterations = static_cast<int64_t>(value);
    }
  }
  if (flags.Has("trace")) config.trace = flags.String("trace");
  if (flags.Has("save-model")) config.save_model = flags.String("save-model");
  config.deterministic = flags.Has("deterministic");
  {
    const std::string shard = flags.String("shard");
    const size_t slash = shard.find('/');
    char* end_index = nullptr;
    char* end_count = nullptr;
    const std::string index = shard.substr(0, slash);
    const std::string count = slash == std::string::npos ? "" : shard.substr(slash + 1);
    const long long i = std::strtoll(index.c_str(), &end_index, 10);
    const long long n = std::strtoll(count.c_str(), &end_count, 10);
    if (index.empty() || count.empty() || *end_index != '\0' || *end_count != '\0') {
      flags.AddProblem("--shard: '" + shard + "' is not I/S (e.g. 1/3)");
    } else {
      config.shard_index = i;
      config.shard_count = n;
    }
  }
  if (config.shard_index > 0 || flags.Has("coordinator")) {
    config.coordinator = flags.String("coordinator");
  }
  if (flags.Has("advertise")) config.advertise = flags.String("advertise");
  if (flags.Has("report")) config.report = flags.String("report");
  config.policy.backup = flags.Int("backup", 0, 100000);
  config.policy.chunk = flags.Int("chunk", 1, 1 << 24);
  config.policy.rebalance_every = flags.Int("rebalance-every", 1, 1 << 30);
  config.policy.lb_mode = flags.String("lb-mode");
  config.policy.predictor = flags.String("predictor");
  config.policy.ema_alpha = flags.Real("ema-alpha", 1e-9, 1);
  {
    dmlps::predict::PredictorOptions order;
    if (dmlps::Status s = dmlps::predict::ParseArimaOrder(flags.String("arima-order"), &order);
        s.ok()) {
      config.policy.arima_p = order.arima_p;
      config.policy.arima_d = order.arima_d;
      config.policy.arima_q = order.arima_q;
    } else {
      flags.AddProblem("--arima-order: " + s.message());
    }
    if (flags.Has("arima-order") && config.policy.predictor != "arima") {
      flags.AddProblem("--arima-order applies only to --predictor arima");
    }
  }
  if (flags.Has("curve-secret")) config.curve_secret = flags.String("curve-secret");
  if (flags.Has("curve-allow")) config.curve_allow = flags.String("curve-allow");
  config.max_message_bytes = flags.Int("max-message-bytes", 0, int64_t{1} << 40);
  config.max_connections = flags.Int("max-connections", 0, 1000000);
  config.policy.lb_step = flags.Int("lb-step", 0, 1 << 24);
  config.policy.token_size = flags.Int("token-size", 1, 1 << 24);
  // A policy flag given for another policy is a mistake worth saying.
  const std::pair<const char*, const char*> policy_flags[] = {
      {"staleness", "ssp"},       {"backup", "backup"},   {"chunk", "abps"},
      {"rebalance-every", "lbbsp"}, {"lb-mode", "lbbsp"}, {"predictor", "lbbsp"},
      {"ema-alpha", "lbbsp"},     {"arima-order", "lbbsp"}, {"lb-step", "lbbsp"},
      {"token-size", "token"}};
  for (const auto& [flag, policy] : policy_flags) {
    if (flags.Has(flag) && config.policy.name != policy) {
      flags.AddProblem(std::string("--") + flag + " applies only to --policy " + policy);
    }
  }
  flags.AddProblems(launch.problems);
  flags.AddProblems(dmlps::server::ValidateConfig(config));
  if (!flags.problems().empty()) return dmlps::cli::ReportUsageErrors("dmlps-server", flags.problems());

  dmlps::cli::SetupLogging("dmlps-server", *parsed);
  if (!launch.launcher.name.empty()) spdlog::info("{}", dmlps::launch::Describe(launch.launcher));
  const std::atomic<int>* signal = dmlps::cli::InstallSignalHandlers();
  // With the trace on standard output, the evaluations are in it, not in a TSV.
  std::ostringstream no_tsv;
  std::ostream& tsv = config.trace == "-" ? static_cast<std::ostream&>(no_tsv) : std::cout;
  dmlps::Result<dmlps::server::RunReport> report = dmlps::server::RunServer(config, tsv, signal);
  if (!report.ok()) return dmlps::cli::ReportError("dmlps-server", report.status());
  if (!config.report.empty()) {
    // Written whole under a temporary name, so a reader never sees half a report.
    std::ostringstream text;
    dmlps::server::WriteRunReport(*report, text);
    if (!dmlps::WriteFileAtomically(config.report, text.str()).ok()) {
      return dmlps::cli::ReportError("dmlps-server",
                                     dmlps::Status::IOError("cannot write " + config.report));
    }
  }
  if (report->signal != 0) return dmlps::cli::ExitCodeForSignal(report->signal);
  if (config.target_accuracy > 0 && !report->target_reached) return dmlps::cli::kExitRunFailed;
  return 0;
}
