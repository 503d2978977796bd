// dmlps-worker: joins a dmlps-server, trains on its shard of the data and
// pushes gradients until the server says stop.
#include <limits>
#include <string>
#include <vector>

#include "dmlps/cli/cli.h"
#include "dmlps/cli/programs.h"
#include "dmlps/launch/launch.h"
#include "dmlps/worker/worker.h"

namespace dmlps::worker_cli {
namespace {

using worker::WorkerConfig;

void AddClusterOptions(cxxopts::Options& options, const launch::LaunchDefaults& launch,
                       const WorkerConfig& defaults) {
  cli::AddFlags(
      options, "Cluster",
      {{"server",
        "Address of the server (from $DMLPS_SERVER, else port $DMLPS_PORT on torchrun's "
        "$MASTER_ADDR, an indexed Job's pod 0, the first host of Slurm's node list, else on "
        "127.0.0.1)",
        "ADDR", launch.server},
       {"rank",
        "Ask for this rank (under torchrun, mpirun, srun, PMI or an indexed Job: the "
        "launcher's rank - 1; else the server assigns one)",
        "R"},
       {"connect-timeout", "Give up (exit 69) when no server answers within SECONDS", "SECONDS",
        "10"},
       {"server-timeout", "Count the server as gone when it is silent for SECONDS", "SECONDS",
        "30"},
       {"reconnect-timeout", "Retry a server that went away for SECONDS, then give up (exit 69)",
        "SECONDS", "30"},
       {"heartbeat-ms", "Milliseconds between heartbeats to the server", "MS",
        std::to_string(defaults.link.heartbeat.count())},
       {"curve-secret",
        "Encrypt and authenticate with CURVE: this worker's secret key FILE (from "
        "dmlps-keygen)",
        "FILE"},
       {"curve-server-key", "The server's public key: 40 Z85 characters, or its .pub FILE",
        "KEY|FILE"},
       {"secret",
        "The job secret FILE (dmlps-keygen --secret; default $DMLPS_SECRET_FILE), which the "
        "server asks of its evaluator and of the worker announcing an external model",
        "FILE"}});
}

void AddTrainingOptions(cxxopts::Options& options, const WorkerConfig& defaults) {
  cli::AddFlags(options, "Training",
                {{"data", "Dataset: fashion-mnist, fashion-mnist:DIR, idx:DIR or libsvm:FILE",
                  "SPEC", defaults.data},
                 {"threads", "Threads for the model's linear algebra", "N", "1"},
                 {"device", "Compute on cpu, or on a CUDA GPU: cuda (device 0) or cuda:N", "DEV",
                  defaults.device},
                 {"max-batch",
                  "The most samples this worker can take in one step (lbbsp respects it; 0: no "
                  "cap; auto: what fits the device's free memory for --model)",
                  "N|auto", "0"},
                 {"model",
                  "The model --max-batch auto sizes for, --announce-layout announces and "
                  "--evaluator evaluates; the server must train this one",
                  "SPEC", defaults.model},
                 {"announce-layout",
                  "Announce --model's layout and initial values (seed 1) in the Hello, as a "
                  "server of --model external needs"},
                 {"evaluator",
                  "Join as the server's evaluator (dmlps-server --evaluator): score each "
                  "snapshot on the test set of --data, with --model if the server's is external"},
                 {"max-features",
                  "Refuse data declaring more features than N (a LIBSVM index, IDX pixels per "
                  "image), exit 65",
                  "N", std::to_string(defaults.max_features)}});
}

void AddStragglerOptions(cxxopts::Options& options) {
  cli::AddFlags(options, "Straggler emulation",
                {{"slowdown", "After a step whose compute took t, sleep (K-1)*t", "K", "1"},
                 {"slowdown-schedule",
                  "Slowdown by iteration, e.g. 0:1,150:4 (4x from iteration 150 on)", "I:K,..."},
                 {"delay-ms",
                  "Sleep D milliseconds after every step (with --delay-prob: sometimes)", "D", "0"},
                 {"delay-prob", "Sleep --delay-ms after a step only with probability P", "P", "0"},
                 {"round-robin-ms",
                  "In iteration t, the worker of rank t mod N sleeps D milliseconds", "D", "0"},
                 {"bandwidth-mbps",
                  "Cap what this worker sends at M megabits per second (0: no cap)", "M", "0"},
                 {"bandwidth-schedule",
                  "Bandwidth cap by iteration, e.g. 0:0,150:100 (100 Mb/s from "
                  "iteration 150 on; 0: no cap)",
                  "I:M,..."}});
}

std::chrono::milliseconds ReadSeconds(cli::FlagReader& flags, const std::string& flag, double min) {
  return std::chrono::milliseconds(static_cast<int64_t>(flags.Real(flag, min, 1e6) * 1000));
}

// A schedule flag, when given, parsed by `parse` into *schedule.
template <typename Parse, typename Schedule>
void ReadSchedule(cli::FlagReader& flags, const std::string& flag, Parse parse,
                  Schedule* schedule) {
  if (!flags.Has(flag)) return;
  auto parsed = parse(flags.String(flag));
  if (parsed.ok()) {
    *schedule = *parsed;
  } else {
    flags.AddProblem("--" + flag + ": " + parsed.status().message());
  }
}

void ReadStraggler(cli::FlagReader& flags, worker::StragglerSpec* straggler) {
  straggler->slowdown = flags.Real("slowdown", 1, 1e6);
  ReadSchedule(flags, "slowdown-schedule", worker::ParseSlowdownSchedule, &straggler->schedule);
  straggler->delay = std::chrono::milliseconds(flags.Int("delay-ms", 0, 86400000));
  straggler->delay_prob = flags.Real("delay-prob", 0, 1);
  straggler->round_robin = std::chrono::milliseconds(flags.Int("round-robin-ms", 0, 86400000));
  straggler->bandwidth_mbps = flags.Real("bandwidth-mbps", 0, 1e9);
  ReadSchedule(flags, "bandwidth-schedule", worker::ParseBandwidthSchedule,
               &straggler->bandwidth_schedule);
}

// Declares every flag; under a launcher, --server defaults to what `launch`
// says.
void AddWorkerOptions(cxxopts::Options& options, const launch::LaunchDefaults& launch) {
  const WorkerConfig defaults;
  AddClusterOptions(options, launch, defaults);
  AddTrainingOptions(options, defaults);
  AddStragglerOptions(options);
  cli::AddCommonOptions(options, /*with_trace=*/true);
}

// Reads the flags into a config, checked whole: every problem (the
// launcher's too) collects in `flags`, in the order of the flags. Returns
// the program that trains under that config.
cli::Program ReadWorkerFlags(cli::FlagReader& flags, const launch::LaunchDefaults& launch) {
  WorkerConfig config;
  config.link.server = flags.String("server");
  config.rank = flags.Has("rank") ? flags.Int("rank", 0, 100000) : launch.worker_rank;
  config.link.connect_timeout = ReadSeconds(flags, "connect-timeout", 0.001);
  config.link.server_timeout = ReadSeconds(flags, "server-timeout", 0.001);
  if (flags.Has("curve-secret")) config.link.curve_secret = flags.String("curve-secret");
  if (flags.Has("curve-server-key"))
    config.link.curve_server_key = flags.String("curve-server-key");
  if (flags.Has("secret")) config.link.secret_file = flags.String("secret");
  config.reconnect_timeout = ReadSeconds(flags, "reconnect-timeout", 0);
  config.link.heartbeat = std::chrono::milliseconds(flags.Int("heartbeat-ms", 1, 3600000));
  config.data = flags.String("data");
  config.threads = flags.Int("threads", 1, 1024);
  config.device = flags.String("device");
  config.model = flags.String("model");
  config.max_features = flags.Int("max-features", 1, std::numeric_limits<int32_t>::max());
  config.announce_layout = flags.Has("announce-layout");
  if (flags.Has("evaluator")) {
    if (config.announce_layout) flags.AddProblem("--evaluator does not announce a layout");
    flags.AddProblems(launch.problems);
    flags.AddProblems(worker::ValidateConfig(config));
    return [config] { return cli::RunEvaluatorProgram(config); };
  }
  if (flags.String("max-batch") == "auto") {
    config.max_batch_auto = true;
  } else {
    config.max_batch = flags.Int("max-batch", 0, 1 << 24);
  }
  if (flags.Has("trace")) config.trace = flags.String("trace");
  ReadStraggler(flags, &config.straggler);
  flags.AddProblems(launch.problems);
  flags.AddProblems(worker::ValidateConfig(config));
  return [config, launcher = launch.launcher] { return cli::RunWorkerProgram(config, launcher); };
}

}  // namespace
}  // namespace dmlps::worker_cli

int main(int argc, char** argv) {
  // Under mpirun, srun or a PMI launcher, rank 0 is the server; ranks 1.. are workers 0..
  return dmlps::cli::RunLaunchedMain(
      {dmlps::cli::kWorkerProgram,
       "Training worker: joins a dmlps-server, which sends it the model,\n"
       "its rank, shard and batch size; trains until told to stop.\n",
       {"Cluster", "Training", "Straggler emulation", "Common"},
       dmlps::worker_cli::AddWorkerOptions,
       dmlps::worker_cli::ReadWorkerFlags},
      argc, argv);
}
