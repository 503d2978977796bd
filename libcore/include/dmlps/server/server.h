// The parameter server: holds the model, runs a synchronization policy over
// the workers' pushes and pulls, and evaluates snapshots on the test set.
#ifndef DMLPS_SERVER_SERVER_H_
#define DMLPS_SERVER_SERVER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/base/job.h"
#include "dmlps/base/status.h"
#include "dmlps/model/model.h"
#include "dmlps/optim/settings.h"
#include "dmlps/sync/policy.h"

namespace dmlps::server {

// --model external: the server trains a model it does not compute; its
// layout and initial values come from ServerConfig::initial or from the
// worker that presents the job secret (proto::Hello).
inline constexpr std::string_view kExternalModel = "external";

struct ServerConfig {
  std::string bind = "tcp://127.0.0.1:5555";
  std::string endpoint_file;  // when set, the bound address is written here once listening
  // The job; its target and limits end the run. Its workers, batch, target
  // and iteration limit reach the policy with it (policy.job is set from it).
  JobSpec job;
  sync::PolicyConfig policy;
  // The rest of the server's optimizer: rule, weight decay, groups,
  // clipping, schedule (see optim::OptimizerSettings). Its lr and momentum
  // are not read: the job's are (see ServerOptimizerSettings).
  optim::OptimizerSettings optimizer;
  int64_t threads = 1;  // threads that sum pushes and apply updates, the event loop's included
  std::chrono::milliseconds heartbeat{1000};        // between heartbeats to the workers
  std::chrono::milliseconds worker_timeout{30000};  // a worker silent this long is lost
  // Shard 0, after going back to its checkpoint (a shard lost): how long it
  // waits for every shard and worker to be back before the run ends.
  std::chrono::milliseconds rejoin_timeout{300000};
  int64_t min_workers = 1;  // fewer live workers than this: training holds until more join
  std::string checkpoint;   // file to checkpoint to; empty: none
  int64_t checkpoint_every_iterations = 0;  // 0: not by iterations
  double checkpoint_every_seconds = 0;      // 0: not by time
  std::string resume;                       // checkpoint to go on from; empty: start afresh
  // --resume refuses a checkpoint holding a value beyond +-this (0: no
  // bound; see CheckTrainable).
  double resume_max_value = 1e12;
  std::string trace;   // trace file ("-": standard output, which then carries no TSV); empty: none
  std::string report;  // when set, the RunReport is written here at the end (see WriteRunReport)
  // Who may connect, and how much a peer may send (see net::BindOptions).
  std::string curve_secret;  // the server's secret key file; empty: plaintext
  std::string curve_allow;   // folder of the admitted workers' public keys (*.pub)
  // The job secret's file (net/secret.h): the evaluator, the worker that
  // announces an external model and, without CURVE, the other server
  // shards must present it. Empty: none, and no peer may take those roles.
  std::string secret_file;
  // --model external: a checkpoint file whose layout and values the run
  // starts from, so that no peer chooses them. Empty: the worker presenting
  // the job secret announces them.
  std::string initial;
  int64_t max_message_bytes = 0;  // 0: the model's size plus kMessageHeadroom
  int64_t max_connections = 0;    // 0: workers plus kConnectionHeadroom
  // Sharded servers: this server holds slice shard_index of shard_count of
  // the flat parameter vector (see ShardBounds). Shard 0 runs the policy and
  // evaluates; the others take their orders from it at `coordinator` and
  // tell workers to reach them at `advertise` (empty: the bound address).
  int64_t shard_index = 0;
  int64_t shard_count = 1;
  std::string coordinator;
  std::string advertise;
  // When set, the parameters this server holds at the end are written here
  // as raw little-endian float32 (a shard: its slice; the shards' files in
  // order make the whole model).
  std::string save_model;
  // Sum the gradients between two updates in rank order, not as they
  // arrive, so that a run is the same bit for bit whatever the timing (and
  // whatever the number of shards). The sum then starts at the update.
  bool deterministic = false;
  // Snapshots go to an evaluator process (proto::Hello::evaluator) instead
  // of being evaluated here; training starts once one has joined. Needed
  // for --target-accuracy with an external model.
  bool remote_evaluator = false;
  // How long a snapshot may wait for the evaluator's answer before it
  // counts as skipped, and the evaluator as gone.
  std::chrono::milliseconds evaluator_timeout{60000};
  // How a round's pushes make the update: mean | median | trimmed-mean:F |
  // cclip:TAU[:ITERS] (see server/aggregate.h); the robust rules need a
  // policy that aggregates rounds and one shard.
  std::string aggregate = "mean";
  // Each push is scaled down to this L2 norm before it is summed (0: no
  // bound); one shard only.
  double max_update_norm = 0;
  // The job's codecs (compress::ParseCodec spellings): every push a worker
  // sends is encoded in push_codec (with error feedback), every model after
  // a worker's first comes as the change since its last, encoded in
  // pull_codec (docs/compression.md, "Compressed pushes and pulls"). One
  // shard, a built-in model.
  std::string push_codec = "none";
  std::string pull_codec = "none";
  // Data declaring more features than this is refused (data::DataSpec).
  int64_t max_features = int64_t{1} << 26;
  // Makes the policy (empty: sync::MakePolicy, which leaves auto to the
  // programs: dmlps-server passes autopolicy::MakePolicy).
  sync::PolicyFactory make_policy;
};

// Where the slices of a model of `num_params` floats over `shards` server
// shards begin, plus the end: shards + 1 offsets, contiguous, sizes that
// differ by one float at most (a large tensor is split across shards).
// REQUIRES: 1 <= shards <= num_params.
std::vector<int64_t> ShardBounds(int64_t num_params, int64_t shards);

// What the default limits allow beyond the model and the cluster: room for
// headers, and for workers reconnecting and tools probing the server.
inline constexpr int64_t kMessageHeadroom = int64_t{1} << 20;
inline constexpr int64_t kConnectionHeadroom = 16;

// The optimizer the server steps the model with: config.optimizer with the
// job's --lr and --momentum, or, under a policy that steps the model with an
// outer optimizer (localsgd, async-localsgd), that one's. Under --aggregate
// cclip the momentum is 0: the rule keeps --momentum per worker instead.
optim::OptimizerSettings ServerOptimizerSettings(const ServerConfig& config);

// Checks a config before anything starts; every problem found, one per line.
std::vector<std::string> ValidateConfig(const ServerConfig& config);

// What a finished run achieved.
struct RunReport {
  bool target_reached = false;
  double seconds_to_target = 0;  // wall time of the first snapshot that reached the target
  int64_t iterations_to_target = 0;
  int64_t samples_to_target = 0;  // samples whose gradients were in that snapshot's model
  int64_t iterations = 0;         // pushes accepted / workers
  model::EvalResult last_eval;    // of the newest evaluated snapshot
  double best_accuracy = 0;       // of the most accurate evaluated snapshot
  double seconds = 0;             // training wall time
  double compute_ratio_mean = 0;  // over workers: (compute + emulated slowness) / run time
  double compute_ratio_min = 0;
  int64_t samples = 0;          // samples whose gradients went into the model
  double wait_share = 0;        // mean over workers of (time waiting for the server) / run time
  int64_t wasted_samples = 0;   // in pushes the policy dropped
  double bytes_per_worker = 0;  // mean over workers of what each sent this server
  // Mean over workers of the model bytes this server sent each, as sent
  // (encoded under --pull-codec); the workers that stepped, as above.
  double model_bytes_per_worker = 0;
  int signal = 0;                  // the signal that ended the run, or 0
  int64_t workers_lost = 0;        // workers declared lost (silent, or gave up); the run went on
  std::string last_lost;           // the last of them and why, or empty
  int64_t workers_joined = 0;      // workers that joined once training was running
  int64_t resumed_iteration = -1;  // the iteration of the checkpoint resumed from; -1: none
  int64_t checkpoints = 0;         // checkpoints written
};

// Writes `report` as "key<TAB>value" lines (booleans 0/1), the format
// `dmlps-server --report FILE` leaves for scripts and dmlps-bench.
void WriteRunReport(const RunReport& report, std::ostream& out);

// Runs a training job to its end: binds, waits for config.workers workers
// (after config.resume: resumes from that checkpoint, DataLoss when it is
// corrupt), trains until the target, an iteration or time limit, or a
// signal (nonzero in *signal). Workers lost on the way are reported and the
// run goes on without them; workers may join at any time. Writes one TSV line per evaluation to
// `tsv` (seconds, iteration, accuracy, loss); progress goes to the log.
Result<RunReport> RunServer(const ServerConfig& config, std::ostream& tsv,
                            const std::atomic<int>* signal);

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_SERVER_H_
