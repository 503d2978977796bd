// dmlps-bench sim: a discrete-event simulator of a whole cluster in virtual
// time. It drives the very policy objects the server runs (sync::MakePolicy),
// carries out their actions as the server does, and steps each simulated
// worker as dmlps-worker's loop for the policy's sync::WorkerMode does.
// Gradients are real (model::Model on each worker's real shard), so accuracy
// curves are real; only time is modelled: compute from a cost model timed on
// this machine, stretched by each worker's worker::StragglerProfile (the
// class dmlps-worker uses) and by noise; messages from a link model.
#ifndef DMLPS_SIM_SIM_H_
#define DMLPS_SIM_SIM_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/bench/experiment.h"
#include "dmlps/bench/report.h"
#include "dmlps/compress/compress.h"
#include "dmlps/data/dataset.h"
#include "dmlps/model/model.h"
#include "dmlps/sync/policy.h"
#include "dmlps/worker/straggler.h"

namespace dmlps::sim {

// Every link (each worker's and the server's, each direction its own) carries
// one message at a time: a message of `bytes` takes bytes * 8 / bandwidth
// once both ends' links are free, then `latency_s` more to arrive.
//
// With `cores_copy` (loopback on a host of SimConfig::shared_cores) there is
// no wire: the host's cores copy each message through the kernel, so a
// message is instead a job of bytes * 8 / bandwidth seconds of CPU that
// shares the cores with compute, then `latency_s` more to arrive.
struct NetworkModel {
  double link_gbps = 10;     // 0: unlimited
  double latency_s = 50e-6;  // one way, per message
  bool cores_copy = false;   // shared cores only: messages are CPU work
};

// A cluster of machines of their own: 10 Gbit/s links, 50 µs one way.
inline constexpr NetworkModel kClusterNetwork{10, 50e-6};
// ZeroMQ over TCP loopback on a host whose cores the workers keep busy, as
// `dmlps-bench run` has it: the cores copy every message (cores_copy), so
// traffic slows compute. Fitted to the time per iteration of real runs of
// the default job on one host (a grid over 3-12 Gbit/s and 100-300 µs;
// docs/simulator.md, "Against real runs");
// a push answered by a Continue there takes about 1.7 ms, a push answered by
// the model behind three other models about 6 ms.
inline constexpr NetworkModel kLoopbackNetwork{3, 300e-6, true};

// The compute time of a gradient step of `samples`, measured alone on a core
// (`seconds`) and while `cores` such steps run at once (`shared_seconds`, for
// SimConfig::shared_cores; equal to `seconds` when not measured).
struct StepCost {
  int64_t samples = 0;
  double seconds = 0;
  double shared_seconds = 0;
};

// What computing costs, in seconds.
struct CostModel {
  // Points sorted by samples, at least one; times between them are
  // interpolated linearly, beyond the last extrapolated along the last
  // segment, below the first scaled in proportion to the samples.
  std::vector<StepCost> steps;
  double param_s = 1e-9;  // one pass over the parameters (axpy, copy), per parameter
  // The server's fixed cost of handling one message (a push or a pull;
  // the model reply it sends is folded in): 30 us, half the CPU a real
  // shard spends per worker and iteration (push, pull and reply on shard 0;
  // push slice and reply on the others: 59-70 us, whatever the slice's
  // size; share/dmlps/experiments/shard-message-cost.sh).
  double message_s = 30e-6;
  double eval_s = 0;  // one evaluation of the test set (shared cores only)

  // A step's time alone on a core, t(b).
  double StepSeconds(int64_t samples) const;
  // A step's speed while other jobs run, relative to alone, in (0, 1].
  double SharedSpeed(int64_t samples) const;
  // t(b) = fixed_s + per_sample_s * b, the same shared or not.
  static CostModel Linear(double fixed_s, double per_sample_s);
};

// Times real steps of `spec` on `train` (Take, Gather and LossAndGradient, as
// dmlps-worker's Compute does) at batch sizes around `batch`, an axpy over
// the parameters, and one evaluation of `test`. With shared_cores >= 2 each
// step size is also timed on that many threads at once. Takes about a second
// for mlp:128 at batch 256. REQUIRES: train and test conform to spec.
Result<CostModel> Calibrate(const model::ModelSpec& spec, const data::Dataset& train,
                            const data::Dataset& test, int64_t batch, int64_t shared_cores);

// Transient slowness of one worker's compute, on top of its StragglerProfile:
// each step's compute time is multiplied by exp(jitter * Z), Z standard
// normal (a lognormal factor of median 1), and by U^(-1/heavy_tail), U
// uniform in (0, 1] (a Pareto factor >= 1 with tail index heavy_tail).
struct Noise {
  double jitter = 0;      // 0: none
  double heavy_tail = 0;  // 0: none; else > 1
};

struct EvalPoint;

struct SimConfig {
  // The job: its workers, batch, rate, target, limits (max_seconds in
  // virtual time) and seed (the model, sampling and delays, as the server's
  // --seed). Its model names the one `model` holds; its data is not read
  // (the caller passes the data).
  JobSpec job{.lr = 0.1};
  // The policy's own parameters; its job is set from `job`.
  sync::PolicyConfig policy;
  // Makes the policy (empty: sync::MakePolicy, which leaves auto to the
  // programs: dmlps-bench passes autopolicy::MakePolicy).
  sync::PolicyFactory make_policy;
  // job.model resolved against the data's shape (model::ParseModelSpec).
  model::ModelSpec model;
  uint64_t noise_seed = 0;  // mixed into delays and noise (a repeat's number); 0: as a real run
  std::vector<worker::StragglerSpec> stragglers;  // one per worker, rank order
  std::vector<Noise> noise;                       // one per worker, or empty: none
  NetworkModel network;
  CostModel cost;
  // 0: every worker and the server have a machine of their own. C >= 1: they
  // all share C cores, as a cluster on one host does; jobs share them
  // equally (processor sharing), at CostModel's shared speed when more than
  // one runs, and evaluations take their share too.
  int64_t shared_cores = 0;
  // With shared cores: 0 shares them as above; S > 0 runs each job on a
  // whole core for slices of S seconds, as the kernel's scheduler does
  // (sim/cpu.h). The order in which ASP's pushes reach the server follows.
  double cpu_slice_s = 0;
  // With a CPU slice: a job that starts while every core is taken preempts
  // the one furthest into its slice (sim/cpu.h), as a process that wakes
  // preempts one that has been running. Backup workers' late pushes then
  // fall out of step with the round's closers, as they do on a real host.
  bool cpu_wake_preempts = false;
  // With a CPU slice: a job that starts runs its first slice this many
  // seconds longer (sim/cpu.h), as the kernel's fair scheduler lets a task
  // that slept run on until the credit it gained is spent.
  double cpu_wake_credit_s = 0;
  // Threads of this machine computing the workers' gradients, at least 1:
  // only the wall time of the simulation depends on it, not its results.
  int64_t threads = 1;
  // Server shards (1 to 1024), as dmlps-server --shard runs them: each a
  // node with links of its own and its own CPU, holding a slice of the
  // model (server::ShardBounds); workers push each its slice, shard 0 runs
  // the policy and sends the others its decisions (orders) over the
  // network, and every shard sends a worker its slice of the model.
  int64_t shards = 1;
  // Hears of each evaluation as it is made (null: none), for live progress.
  std::function<void(const EvalPoint&)> on_eval;
  // Parameters a model message carries (0: the model's own). SimulateTiming
  // sets it so that a tiny stand-in model's messages weigh what the real
  // model's would.
  int64_t payload_params = 0;
  // The codecs of pushes and of the model the server sends (dmlps-server's
  // --push-codec and --pull-codec; docs/compression.md, "In the simulator").
  // Every push and model message weighs its encoded size. A push's payload
  // goes through its worker's error feedback and is decoded before the
  // server stages it, slice by slice with shards, so accuracy shows the push
  // codec's loss; a worker gets the model exact, whatever pull_codec.
  compress::Codec push_codec;
  compress::Codec pull_codec;
  // Whether steps compute their gradients. Without (SimulateTiming), pushes
  // carry zeros and steps take no samples: the run's times are the same,
  // since no event's time depends on a gradient's values, and a timing
  // run's cost is the events' alone.
  bool math = true;
};

// Every problem with `config`, one message each; empty if none.
std::vector<std::string> ValidateSimConfig(const SimConfig& config);

struct WorkerStats {
  int64_t steps = 0;  // pushes
  int64_t samples = 0;
  double compute_s = 0;   // compute, local updates included
  double straggle_s = 0;  // emulated slowness (StragglerProfile)
  double wait_s = 0;      // waiting for the server's answers
  double comm_s = 0;      // bandwidth-capped sending (--bandwidth-mbps)
  // Over its pushes: the model's version when the server took the push, less
  // the version the push was computed on (the staleness traces record).
  double staleness_sum = 0;
};

struct EvalPoint {
  double seconds = 0;  // virtual time the snapshot existed
  int64_t iteration = 0;
  int64_t samples = 0;  // samples whose gradients were in the model by then
  double accuracy = 0;
  double loss = 0;
};

// A policy switch as the simulated server saw it (sync-switch, auto).
struct SimSwitch {
  double seconds = 0;  // virtual time
  sync::Switch change;
};

// A decision of auto's decider (switch or stay), at a virtual time.
struct SimDecision {
  double seconds = 0;  // virtual time
  sync::Decision decision;
};

struct SimReport {
  bool reached = false;
  double seconds_to_target = 0;
  int64_t iterations_to_target = 0;
  int64_t samples_to_target = 0;
  double seconds = 0;      // virtual time at the end of the run
  int64_t iterations = 0;  // at the end
  int64_t samples = 0;     // applied by the end
  int64_t wasted_samples = 0;
  int64_t dropped_pushes = 0;
  double compute_ratio_mean = 0;  // over workers: (compute + straggle) / seconds
  double compute_ratio_min = 0;
  double wait_share = 0;        // mean over workers of wait / seconds
  double bytes_per_worker = 0;  // mean over workers of what each sent the server
  std::vector<EvalPoint> curve;
  std::vector<WorkerStats> workers;
  std::vector<SimSwitch> switches;     // decided and done, in order
  std::string started_under;           // a switching policy's first policy; empty for others
  std::vector<SimDecision> decisions;  // auto's, in order
  int64_t events = 0;                  // events simulated
  double wall_seconds = 0;             // real time the simulation took
  std::string failure;                 // why the run could not go on (empty: it ended normally)
};

// Simulates one run. `train` is the whole training set (worker r's shard is
// data::ShardRange of it, as dmlps-worker loads it), `test` the server's test
// set; both conform to config.model. InvalidArgument for a bad config;
// otherwise a report, with `failure` set if the run stalled.
Result<SimReport> Simulate(const SimConfig& config, const data::Dataset& train,
                           const data::Dataset& test);

// Simulates one run on timing alone, for a model of `num_params` parameters
// that need not be known to the simulator (an external model too): the
// policies' own code drives workers whose steps cost what config.cost says,
// while the gradient math runs on a one-feature stand-in model and data, so
// it costs next to nothing and the report's accuracies mean nothing.
// Messages weigh and passes over the parameters cost as for num_params.
// config.model and config.target are ignored (the run ends at a limit);
// InvalidArgument for a bad config or num_params < 1.
Result<SimReport> SimulateTiming(SimConfig config, int64_t num_params);

// The simulated run as a row of dmlps-bench's table.
bench::RunResult ToRunResult(const SimReport& report, const std::string& policy, int64_t repeat);

// What `dmlps-bench sim` adds to an experiment.
struct SimOptions {
  NetworkModel network = kClusterNetwork;
  std::vector<Noise> noise;       // one per worker, or empty
  std::optional<CostModel> cost;  // empty: calibrate at start
  int64_t shared_cores = 0;
  double cpu_slice_s = 0;           // SimConfig::cpu_slice_s
  bool cpu_wake_preempts = false;   // SimConfig::cpu_wake_preempts
  double cpu_wake_credit_s = 0;     // SimConfig::cpu_wake_credit_s
  int64_t threads = 1;              // SimConfig::threads
  int64_t shards = 1;               // SimConfig::shards
  sync::PolicyFactory make_policy;  // SimConfig::make_policy
  // Live progress, as bench::ExperimentOptions::show: the run's label
  // ("[2/10] bsp run 1/2") and, at each evaluation, the wall time the run
  // has taken, its virtual time, iteration and accuracy. Null: none.
  std::function<void(const std::string& label, const bench::Progress& progress)> show;
};

// Loads the experiment's data once, calibrates (unless options.cost), and
// simulates every policy `repeat` times, policies taking turns; repeats
// differ only in their random delays and noise. `progress`, if set, hears
// of each run as it finishes.
Result<std::vector<bench::RunResult>> SimulateExperiment(
    const bench::Experiment& experiment, const SimOptions& options,
    const std::function<void(const bench::RunResult&, const SimReport&)>& progress = {});

}  // namespace dmlps::sim

#endif  // DMLPS_SIM_SIM_H_
