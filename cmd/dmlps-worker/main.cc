// dmlps-worker: joins a dmlps-server, trains on its shard of the data and
// pushes gradients until the server says stop.
#include <spdlog/spdlog.h>

#include "dmlps/cli/cli.h"
#include "dmlps/launch/launch.h"
#include "dmlps/worker/worker.h"

int main(int argc, char** argv) {
  using dmlps::worker::WorkerConfig;
  const WorkerConfig defaults;
  // Under mpirun, srun or a PMI launcher, rank 0 is the server; ranks 1.. are workers 0..
  const dmlps::launch::LaunchDefaults launch = dmlps::launch::ReadLaunchDefaults();
  cxxopts::Options options("dmlps-worker",
                           "Training worker: joins a dmlps-server, which sends it the model,\n"
                           "its rank, shard and batch size; trains until told to stop.\n");
  options.add_options("Cluster")
      ("server", "Address of the server (from $DMLPS_SERVER, else port $DMLPS_PORT on the first "
       "host of Slurm's node list, else on 127.0.0.1)",
       cxxopts::value<std::string>()->default_value(launch.server), "ADDR")
      ("rank", "Ask for this rank (under mpirun, srun or PMI: the launcher's rank - 1; else "
       "the server assigns one)",
       cxxopts::value<std::string>(), "R")
      ("connect-timeout", "Give up (exit 69) when no server answers within SECONDS",
       cxxopts::value<std::string>()->default_value("10"), "SECONDS")
      ("server-timeout", "Count the server as gone when it is silent for SECONDS",
       cxxopts::value<std::string>()->default_value("30"), "SECONDS")
      ("reconnect-timeout", "Retry a server that went away for SECONDS, then give up (exit 69)",
       cxxopts::value<std::string>()->default_value("30"), "SECONDS")
      ("heartbeat-ms", "Milliseconds between heartbeats to the server",
       cxxopts::value<std::string>()->default_value(std::to_string(defaults.heartbeat.count())), "MS")
      ("curve-secret", "Encrypt and authenticate with CURVE: this worker's secret key FILE "
       "(from dmlps-keygen)", cxxopts::value<std::string>(), "FILE")
      ("curve-server-key", "The server's public key: 40 Z85 characters, or its .pub FILE",
       cxxopts::value<std::string>(), "KEY|FILE");
  options.add_options("Training")
      ("data", "Dataset: fashion-mnist, fashion-mnist:DIR, idx:DIR or libsvm:FILE",
       cxxopts::value<std::string>()->default_value(defaults.data), "SPEC")
      ("threads", "Threads for the model's linear algebra",
       cxxopts::value<std::string>()->default_value("1"), "N")
      ("device", "Compute on cpu, or on a CUDA GPU: cuda (device 0) or cuda:N",
       cxxopts::value<std::string>()->default_value(defaults.device), "DEV")
      ("max-batch", "The most samples this worker can take in one step (lbbsp respects it; 0: "
       "no cap; auto: what fits the device's free memory for --model)",
       cxxopts::value<std::string>()->default_value("0"), "N|auto")
      ("model", "The model --max-batch auto sizes for; the server must train this one",
       cxxopts::value<std::string>()->default_value(defaults.model), "SPEC");
  options.add_options("Straggler emulation")
      ("slowdown", "After a step whose compute took t, sleep (K-1)*t",
       cxxopts::value<std::string>()->default_value("1"), "K")
      ("slowdown-schedule", "Slowdown by iteration, e.g. 0:1,150:4 (4x from iteration 150 on)",
       cxxopts::value<std::string>(), "I:K,...")
      ("delay-ms", "Sleep D milliseconds after every step (with --delay-prob: sometimes)",
       cxxopts::value<std::string>()->default_value("0"), "D")
      ("delay-prob", "Sleep --delay-ms after a step only with probability P",
       cxxopts::value<std::string>()->default_value("0"), "P")
      ("round-robin-ms", "In iteration t, the worker of rank t mod N sleeps D milliseconds",
       cxxopts::value<std::string>()->default_value("0"), "D")
      ("bandwidth-mbps", "Cap what this worker sends at M megabits per second (0: no cap)",
       cxxopts::value<std::string>()->default_value("0"), "M")
      ("bandwidth-schedule", "Bandwidth cap by iteration, e.g. 0:0,150:100 (100 Mb/s from "
       "iteration 150 on; 0: no cap)", cxxopts::value<std::string>(), "I:M,...");
  dmlps::cli::AddCommonOptions(options, /*with_trace=*/true);

  int exit_code = 0;
  std::optional<cxxopts::ParseResult> parsed = dmlps::cli::ParseArgs(
      options, {"Cluster", "Training", "Straggler emulation", "Common"}, argc, argv, &exit_code);
  if (!parsed) return exit_code;
  dmlps::cli::FlagReader flags(*parsed);
  WorkerConfig config;
  config.server = flags.String("server");
  if (flags.Has("rank")) {
    config.rank = flags.Int("rank", 0, 100000);
  } else {
    config.rank = launch.worker_rank;
  }
  config.connect_timeout = std::chrono::milliseconds(
      static_cast<int64_t>(flags.Real("connect-timeout", 0.001, 1e6) * 1000));
  config.server_timeout = std::chrono::milliseconds(
      static_cast<int64_t>(flags.Real("server-timeout", 0.001, 1e6) * 1000));
  if (flags.Has("curve-secret")) config.curve_secret = flags.String("curve-secret");
  if (flags.Has("curve-server-key")) config.curve_server_key = flags.String("curve-server-key");
  config.reconnect_timeout = std::chrono::milliseconds(
      static_cast<int64_t>(flags.Real("reconnect-timeout", 0, 1e6) * 1000));
  config.heartbeat = std::chrono::milliseconds(flags.Int("heartbeat-ms", 1, 3600000));
  config.data = flags.String("data");
  config.threads = flags.Int("threads", 1, 1024);
  config.device = flags.String("device");
  config.model = flags.String("model");
  if (flags.String("max-batch") == "auto") {
    config.max_batch_auto = true;
  } else {
    config.max_batch = flags.Int("max-batch", 0, 1 << 24);
  }
  if (flags.Has("trace")) config.trace = flags.String("trace");
  dmlps::worker::StragglerSpec& straggler = config.straggler;
  straggler.slowdown = flags.Real("slowdown", 1, 1e6);
  if (flags.Has("slowdown-schedule")) {
    auto schedule = dmlps::worker::ParseSlowdownSchedule(flags.String("slowdown-schedule"));
    if (schedule.ok()) {
      straggler.schedule = *schedule;
    } else {
      flags.AddProblem("--slowdown-schedule: " + schedule.status().message());
    }
  }
  straggler.delay = std::chrono::milliseconds(flags.Int("delay-ms", 0, 86400000));
  straggler.delay_prob = flags.Real("delay-prob", 0, 1);
  straggler.round_robin = std::chrono::milliseconds(flags.Int("round-robin-ms", 0, 86400000));
  straggler.bandwidth_mbps = flags.Real("bandwidth-mbps", 0, 1e9);
  if (flags.Has("bandwidth-schedule")) {
    auto schedule = dmlps::worker::ParseBandwidthSchedule(flags.String("bandwidth-schedule"));
    if (schedule.ok()) {
      straggler.bandwidth_schedule = *schedule;
    } else {
      flags.AddProblem("--bandwidth-schedule: " + schedule.status().message());
    }
  }
  flags.AddProblems(launch.problems);
  flags.AddProblems(dmlps::worker::ValidateConfig(config));
  if (!flags.problems().empty()) return dmlps::cli::ReportUsageErrors("dmlps-worker", flags.problems());

  dmlps::cli::SetupLogging("dmlps-worker", *parsed);
  if (!launch.launcher.name.empty()) spdlog::info("{}", dmlps::launch::Describe(launch.launcher));
  const std::atomic<int>* signal = dmlps::cli::InstallSignalHandlers();
  dmlps::Result<dmlps::worker::WorkerReport> report = dmlps::worker::RunWorker(config, signal);
  if (!report.ok()) return dmlps::cli::ReportError("dmlps-worker", report.status());
  if (report->signal != 0) return dmlps::cli::ExitCodeForSignal(report->signal);
  return 0;
}
