// Shard 0 of dmlps-server: the server the workers join, which runs the
// policy and, sharded, tells the other shards what it decided. Its run
// (setup, phases, the end) is ParameterServer's, in server.cc; the
// policy's effects go to the driver's sinks: replies to its WorkerDesk
// (which also handles the workers' messages, and the workers it admits and
// loses), updates to its ModelUpdates, and the run's progress to its
// RunEventSink (evaluations, checkpoints).
#ifndef DMLPS_SERVER_PARAMETER_SERVER_H_
#define DMLPS_SERVER_PARAMETER_SERVER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "dmlps/base/status.h"
#include "dmlps/net/endpoint.h"
#include "dmlps/proto/codec.h"
#include "dmlps/server/server.h"
#include "dmlps/sync/driver.h"
#include "dmlps/trace/trace.h"
#include "server/coordinator.h"
#include "server/evaluator.h"
#include "server/external.h"
#include "server/loop.h"
#include "server/remote_evaluator.h"
#include "server/run_checkpoints.h"
#include "server/run_clock.h"
#include "server/run_evaluations.h"
#include "server/run_events.h"
#include "server/server_model.h"
#include "server/shard_recovery.h"
#include "server/updates.h"
#include "server/worker_desk.h"

namespace dmlps::server {

class ParameterServer {
 public:
  // `continues`: the clock of the run this one goes on with after a
  // rollback (shard_recovery.cc): its TSV, under the header that run
  // wrote, its report and --max-seconds count from that run's start.
  ParameterServer(const ServerConfig& config, std::ostream& tsv, const std::atomic<int>* signal,
                  std::optional<RunClock> continues = std::nullopt)
      : config_(config), tsv_(tsv), signal_(signal), timer_(continues) {}

  Result<RunReport> Run();
  // Sharded, after Run: a shard was lost and, with --checkpoint, the job
  // goes back to its last checkpoint (Rollback): the caller runs shard 0
  // again with --resume of it, bound to address(), where workers rejoin.
  bool rolled_back() const { return rollback_.has_value() && rollback_->begun(); }
  std::string address() const { return endpoint_.has_value() ? endpoint_->address() : ""; }
  // The run's clock, for the run that goes on after a rollback; none
  // before the run started.
  std::optional<RunClock> run_clock() const { return timer_.next(); }
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
  // Setup's parts. Once model_ is made (`what` says what it is): sets up the
  // policy's driver and the store for `params` (the model's initial
  // values; --resume replaces them).
  Status SetUpParams(std::vector<float> params, const std::string& what);
  // --model external: binds and learns the model (ExternalModel::Open),
  // then sets it up; leaves model_ null on a signal.
  Status SetUpExternal(net::BindOptions bind_options);
  // Once the model is set up: answers the Hellos held while the layout was
  // awaited (the first worker's, an evaluator's, the other server shards').
  void AnswerHeldHellos();
  // Hands the messages a peer other than a worker sent to the evaluator.
  // Every message from a peer without a rank comes here first: on an
  // external server, a Hello first gives its connection the model's send
  // queue bound (ExternalModel::BoundNewPeer).
  bool HandlePeer(const zmq::message_t& identity, proto::Message& message);
  bool external() const { return config_.job.model == kExternalModel; }
  Status SetUpPolicy();
  // Sets up what the driver's effects go to (the updates, evaluations and
  // checkpoints, and desk_), once the endpoint, the coordinator and the
  // store are, and connects the driver to them. `evaluator` evaluates the
  // snapshots.
  void SetUpSinks(std::unique_ptr<SnapshotEvaluator> evaluator, int64_t max_message_bytes);
  // One turn of the event loop: a message handled, then the timers
  // (evaluations, limits, heartbeats and silence, checkpoints, stalled
  // streams, the other shards' orders). An error ends the run.
  Status Turn();
  // The closing summary: per worker, and in the report.
  void Summarize();
  // Every worker of the job is ready: training starts.
  void Start();
  // Loads --resume into *params, the optimizer and the policy.
  Status Resume(std::vector<float>* params);
  bool Finished() const;

  // Sharded servers: this is shard 0, which tells the others (shards_)
  // what the policy decided, translated into orders.
  bool sharded() const { return config_.shard_count > 1; }
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
  // The model, its slices, this shard's optimizer and store (streamed
  // pushes and replies pipeline in it). Null until it is known.
  std::unique_ptr<ServerModel> model_;
  RemoteEvaluator* remote_ = nullptr;  // the evaluator, with --evaluator
  std::string secret_;                 // the job secret (--secret); empty: none
  // --model external: where the model came from, and the Hellos held
  // meanwhile. None for a built-in model.
  std::optional<ExternalModel> external_;
  bool workers_ready_ = false;  // with --evaluator: training waits for the evaluator
  std::unique_ptr<trace::TraceWriter> tracer_;  // null without --trace

  // The driver's sinks: the workers (their messages, members, streamed
  // pushes and replies), the model's updates (sharded: ordered of the other
  // shards too), and the run's progress.
  std::optional<WorkerDesk> desk_;
  std::optional<ModelUpdates> updates_;
  std::optional<RunEvaluations> evaluations_;
  std::optional<RunCheckpoints> checkpoints_;
  std::optional<RunEventSink> events_;

  RunTimer timer_;
  Clock::time_point last_heartbeat_;
  RunReport report_;
  double seconds_before_ = 0;  // training time before --resume

  // Sharded servers (see sharded()).
  std::unique_ptr<ShardCoordinator> shards_;  // set once bound; with one shard, idle
  std::optional<Rollback> rollback_;          // a shard lost: see rolled_back()
  bool rejoining_ = false;                    // see ExpectRejoin()
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_PARAMETER_SERVER_H_
