// Shard 0 of dmlps-server: the server the workers join, which runs the
// policy and, sharded, tells the other shards what it decided. Its run
// (setup, phases, the policy's effects, evaluation, checkpoints) is
// ParameterServer's, in server.cc; what it does with the workers' messages,
// and with the workers it admits and loses, is its WorkerDesk's.
#ifndef DMLPS_SERVER_PARAMETER_SERVER_H_
#define DMLPS_SERVER_PARAMETER_SERVER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "dmlps/base/status.h"
#include "dmlps/data/dataset.h"
#include "dmlps/model/model.h"
#include "dmlps/net/endpoint.h"
#include "dmlps/optim/optimizer.h"
#include "dmlps/proto/codec.h"
#include "dmlps/server/checkpoint.h"
#include "dmlps/server/server.h"
#include "dmlps/sync/driver.h"
#include "dmlps/trace/trace.h"
#include "server/checkpoint_writer.h"
#include "server/coordinator.h"
#include "server/evaluation_log.h"
#include "server/evaluator.h"
#include "server/hello_hold.h"
#include "server/loop.h"
#include "server/model_store.h"
#include "server/remote_evaluator.h"
#include "server/updates.h"
#include "server/worker_desk.h"

namespace dmlps::server {

// Where a run's clock started: when its workers were first all ready.
struct RunClock {
  Clock::time_point start;
  int64_t start_us = 0;  // the same, µs since the Unix epoch (the trace's clock)
};

// The policy's replies go to the workers through its desk (WorkerDesk),
// its updates to the model store and (sharded) the other shards through
// its ModelUpdates; what the run hears of the policy's progress, below.
class ParameterServer : private sync::RunEvents {
 public:
  // `continues`: the clock of the run this one goes on with after a
  // rollback (shard_recovery.cc): its TSV, under the header that run
  // wrote, its report and --max-seconds count from that run's start.
  ParameterServer(const ServerConfig& config, std::ostream& tsv, const std::atomic<int>* signal,
                  std::optional<RunClock> continues = std::nullopt)
      : config_(config),
        tsv_(tsv),
        signal_(signal),
        held_hellos_(config.workers + kConnectionHeadroom + config.shard_count, kMaxHeldHelloBytes),
        continues_(continues) {}

  Result<RunReport> Run();
  // Sharded, after Run: a shard was lost and, with --checkpoint, the job
  // goes back to its last checkpoint (RollBack): the caller runs shard 0
  // again with --resume of it, bound to address(), where workers rejoin.
  bool rolled_back() const { return rolled_back_; }
  std::string address() const { return endpoint_.has_value() ? endpoint_->address() : ""; }
  // The run's clock, for the run that goes on after a rollback; none
  // before the run started.
  std::optional<RunClock> run_clock() const { return started_ ? run_clock_ : continues_; }
  // This run follows a rollback: the job must be whole again (every shard
  // registered, every worker ready) within --rejoin-timeout, else it ends.
  void ExpectRejoin() { rejoining_ = true; }

 private:
  // The phases of a run, in order. Setup loads the data and the model,
  // starts the policy and listens; the workers join and load their data
  // (WaitForWorkers) until all are ready; Train runs the policy until the
  // target, a limit or a signal; Finish lets what is in flight land, stops
  // the workers and sums up.
  Status Setup();
  Status WaitForWorkers();
  Status Train();
  Result<RunReport> Finish();
  // Setup's parts: the model, the optimizer and the store; the policy's driver.
  Status SetUpModel(const data::Dataset& test_set);
  // Sets up the optimizer, the policy and the store for `params` (the
  // model's initial values; --resume replaces them).
  Status SetUpParams(std::vector<float> params, const std::string& what, int64_t num_params);
  // --model external: binds, then waits for the first worker's layout and
  // initial values (--resume: takes the checkpoint's layout instead), or a
  // signal. Sets layout_ and the model, or leaves layout_ empty on a signal.
  Status SetUpExternal(net::BindOptions bind_options);
  // One message while the layout is awaited: a valid first worker's Hello
  // sets layout_ and *params; evaluators' Hellos are held, others refused.
  void TakeLayoutMessage(net::Frames& frames, std::vector<float>* params);
  // Binds the external model's endpoint: with the limits of its size when
  // layout_ is known, else with those of the largest message taken.
  Status BindExternal(net::BindOptions bind_options);
  // --initial: sets layout_ and *params from the file.
  Status ReadInitialModel(std::vector<float>* params);
  // Once an external model's size is known: each peer's unread bytes and
  // send queue bounded as a built-in model's are (SetServerLimits). The
  // queue bound reaches the connections open now; HandlePeer gives it to
  // those opened later.
  Status LimitToModel(int64_t num_params);
  // Once the model is set up: answers the Hellos held while the layout was
  // awaited (the first worker's, an evaluator's, the other server shards').
  void AnswerHeldHellos();
  // Hands the messages a peer other than a worker sent to the evaluator.
  // Every message from a peer without a rank comes here first: on an
  // external server, a Hello first gives its connection the model's send
  // queue bound (LimitToModel).
  bool HandlePeer(const zmq::message_t& identity, proto::Message& message);
  bool external() const { return config_.model == kExternalModel; }
  std::string ModelName() const;
  Status SetUpPolicy();
  // Sets up desk_, once the endpoint, the coordinator and the store are,
  // and connects the driver to its sinks.
  void SetUpDesk(int64_t max_message_bytes);
  // One turn of the event loop: a message handled, then the timers
  // (evaluations, limits, heartbeats and silence, checkpoints, stalled
  // streams, the other shards' orders). An error ends the run.
  Status Turn();
  // The closing summary: per worker, and in the report.
  void Summarize();
  // Every worker of the job is ready: training starts.
  void Start();
  // The run's events, as the driver reports them.
  void Evaluate(bool must) override { SubmitSnapshot(must); }
  void LimitReached() override;
  void IterationAdvanced() override { MaybeCheckpoint(); }
  void HoldChanged(bool holding, int64_t live) override;
  void Switched(const sync::Switch& change) override;
  void Decided(const sync::Decision& decision) override;
  // Queues the current model for evaluation; `must` ones are never skipped.
  void SubmitSnapshot(bool must);
  void CollectEvaluations();
  // Loads --resume into the model, the optimizer and the policy.
  Status Resume(std::vector<float>* params);
  // The names this run's checkpoints record, which one resumed must match.
  CheckpointIdentity Identity() const;
  // Hands a checkpoint to the writer when one is due and every update
  // queued has been applied.
  void MaybeCheckpoint();
  // At the end: writes the checkpoint pending and reports what was written.
  void FinishCheckpoints();
  // Seconds since the run's start (run_clock_): 0 before it.
  double Seconds() const;
  bool Finished() const;

  // Sharded servers: this is shard 0, which tells the others (shards_)
  // what the policy decided, translated into orders.
  bool sharded() const { return config_.shard_count > 1; }
  // Writes --save-model: the parameters this shard holds.
  Status SaveModel();
  // Sets up shards_, once the endpoint is bound.
  void StartCoordinator();

  const ServerConfig& config_;
  std::ostream& tsv_;
  const std::atomic<int>* signal_;

  zmq::context_t context_;
  std::optional<net::Endpoint> endpoint_;
  // The policy and what it decided per worker; policy_ is its policy, to read.
  std::optional<sync::PolicyDriver<Gradient>> driver_;
  const sync::Policy* policy_ = nullptr;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::optional<model::ModelSpec> spec_;
  std::unique_ptr<SnapshotEvaluator> evaluator_;
  RemoteEvaluator* remote_ = nullptr;  // evaluator_, with --evaluator
  std::string secret_;                 // the job secret (--secret); empty: none
  TargetProgress target_progress_;     // evaluations meeting the target in a row
  // --model external: the layout the first worker announced (or --resume
  // recorded), which every worker must announce; empty for a built-in model.
  std::vector<model::TensorSpec> layout_;
  // The Hellos that came while the external model's layout was awaited (the
  // announcer's, other workers', an evaluator's, the other shards'),
  // handled once the model is set up.
  HelloHold held_hellos_;
  int64_t endpoint_max_bytes_ = 0;  // external: the largest message taken
  int64_t queue_limit_ = 0;         // external, once the model is known: LimitToModel's
  // External and sharded: the whole initial model, for the other shards'
  // Welcomes (shard 0's store keeps only its slice). Null otherwise.
  std::shared_ptr<const std::vector<float>> external_initial_;
  bool workers_ready_ = false;  // with --evaluator: training waits for the evaluator
  std::unique_ptr<trace::TraceWriter> tracer_;  // null without --trace
  int64_t start_us_ = 0;                        // the run's start, µs since the Unix epoch

  // The model and the accumulator; streamed pushes and replies pipeline in it.
  std::optional<ModelStore> store_;
  // The workers: their messages, members, streamed pushes and replies.
  std::optional<WorkerDesk> desk_;

  bool started_ = false;
  Clock::time_point start_;  // this server's start; its checkpoints' time counts from it
  std::optional<RunClock> continues_;
  RunClock run_clock_;  // continues_, else this server's start
  Clock::time_point last_heartbeat_;
  RunReport report_;

  std::unique_ptr<CheckpointWriter> checkpoints_;  // null without --checkpoint
  std::optional<CheckpointSchedule> checkpoint_schedule_;
  double seconds_before_ = 0;      // training time before --resume
  bool resume_evaluated_ = false;  // the first evaluation after --resume came
  Status unfit_;                   // its loss was not finite: the run ends with this

  // Sharded servers (see sharded()).
  std::vector<int64_t> bounds_;               // where the slices begin, plus the end
  std::unique_ptr<ShardCoordinator> shards_;  // set once bound; with one shard, idle
  std::optional<ModelUpdates> updates_;       // set with shards_
  bool rolled_back_ = false;                  // see rolled_back()
  bool rejoining_ = false;                    // see ExpectRejoin()
  // Sharded: shard 0's checkpoint whose version some other shard has not
  // written yet. Shard 0's file only ever holds a version every shard has
  // in its own file (its last or the one before), so that the job can
  // always go back to it.
  std::optional<Checkpoint> unacked_;
  // Hands unacked_ to the writer once every other shard wrote its version.
  void CommitCheckpoint();
  // A shard lost: with a checkpoint to go back to, tells the workers and
  // the other shards to join again and returns true (shard_recovery.cc).
  bool RollBack();
  // After a rollback, the job was not whole again within --rejoin-timeout:
  // stops the workers and shards that came back; Unavailable saying who
  // did not (shard_recovery.cc).
  Status RejoinTimedOut();
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_PARAMETER_SERVER_H_
