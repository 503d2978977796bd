// The simulator's worker: a state machine in virtual time stepping through
// what dmlps-worker's loop for its sync::WorkerMode does (worker/steps.cc):
//   sync     pull -> compute -> straggle -> send push -> pull ...
//   chunked  as sync, in chunks, pushing early once a SyncNow names the step
//   local    compute -> straggle -> local update -> push delta -> await
//            Continue -> (download) -> compute ...
//   local-overlap  a compute loop that never waits and a communication loop
//            that pushes what is pending and downloads when told
//   token    train the granted token -> push -> await Continue or Model ...
//   local-sgd  H x (compute -> straggle -> local update) -> push the
//            pseudo-gradient -> pull ...
// It acts on the world only through a WorkerHost: the virtual clock, wake-ups,
// CPU jobs, messages to the server.
//
// Gradient math is real but done lazily where the result is the same: a
// sync, chunked or token step's gradient is computed when the server stages
// its push (AddPush, on the model the step ran on, over the samples the step
// took), so pushes that are dropped cost no math and a worker holds only a
// shared pointer to its model version. Local steps are computed when they
// end, since the next step needs them.
#ifndef DMLPS_SIM_WORKER_H_
#define DMLPS_SIM_WORKER_H_

#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dmlps/compress/compress.h"
#include "dmlps/data/dataset.h"
#include "dmlps/model/model.h"
#include "dmlps/sim/sim.h"
#include "dmlps/sync/policy.h"
#include "dmlps/worker/epoch_cursor.h"
#include "sim/gradients.h"
#include "sim/local_steps.h"
#include "sim/message.h"
#include "sim/step_timing.h"

namespace dmlps::sim {

// A push's samples as the simulated server stages them: those of a lazily
// computed step (empty for a local step's delta, which its worker holds).
using Samples = std::span<const int64_t>;

// The model and buffers every worker's gradient math uses. The simulation
// runs one thing at a time, so one set serves them all (and the server);
// the gradients of lazily computed steps may be computed on `threads`.
struct StepMath {
  // REQUIRES: train conforms to spec and outlives this.
  // Without `math` (SimConfig::math) every gradient is zero and steps take
  // no samples.
  StepMath(const model::ModelSpec& spec, const data::Dataset& train, int64_t threads = 1,
           bool math = true);

  // A local step's gradient: that of `params` on the samples `indices`,
  // into `grad`. Softmax regression on dense rows reads the rows in place
  // (model/softmax_rows.h), as the pushes' gradients do; other models
  // gather the batch first.
  void LocalGradient(std::span<const float> params);
  // Takes a step's `samples` from `cursor`, a worker's over the rows of its
  // shard from row `first` on, into `indices` (without `math`, none).
  void TakeSamples(worker::EpochCursor& cursor, int64_t first, int64_t samples);

  model::Model model;
  const data::Dataset& train;
  PushGradients pushes;          // sync, chunked and token steps' gradients
  std::vector<float> grad;       // num_params entries
  std::vector<int64_t> indices;  // the samples last taken (TakeSamples)
  // Under a push codec: a push's payload and its encoding, while it is staged.
  std::vector<float> payload;
  std::vector<std::byte> encoded;
  Eigen::MatrixXf x;
  std::vector<int32_t> y;
  const bool math;

 private:
  const bool rows_kernel_;
  model::SoftmaxRowsScratch rows_;
};

// A worker's threads: the compute loop, and local-overlap's communication loop.
enum class WorkerThread : uint64_t { kCompute = 0, kComm = 1 };

// What a simulated worker asks of the simulator. Calls come back into the
// worker later, never from within these.
class WorkerHost {
 public:
  virtual ~WorkerHost() = default;
  // The virtual time now, in seconds.
  virtual double now() const = 0;
  // Calls workers[w].OnWake(thread) at virtual time `time`.
  virtual void Wake(int64_t w, double time, WorkerThread thread) = 0;
  // Runs a CPU job for worker `w`, `work` seconds alone on a core, at
  // `shared_speed` beside others (CostModel::SharedSpeed); calls
  // workers[w].OnJobDone() when it is done.
  virtual void StartJob(int64_t w, double work, double shared_speed) = 0;
  // Sends `message` of `bytes` from worker `w` to the server.
  virtual void SendToServer(int64_t w, int64_t bytes, Message message) = 0;
  // Ends the run as failed: the server broke the protocol as the worker
  // sees it, which is a bug here.
  virtual void Fail(std::string why) = 0;
};

class SimWorker {
 public:
  // Worker `rank` of config's run stepping in `mode`, training on `shard`
  // (rows of math.train), seeded as dmlps-worker seeds its sampling and
  // delays. It starts waiting for the model, as if it had pulled clock 0.
  // REQUIRES: the shard is not empty; math and host outlive this.
  SimWorker(const SimConfig& config, sync::WorkerMode mode, int64_t rank,
            std::pair<int64_t, int64_t> shard, StepMath& math, WorkerHost& host);

  // A message from the server arrived.
  void Receive(Message message);
  // The CPU job this worker started is done.
  void OnJobDone();
  // The wake-up `thread` asked for came.
  void OnWake(WorkerThread thread);

  // The samples of `push`, the last push this worker sent: drawn from the
  // cursor when it left, in push order, as the step would have when it
  // computed them. Empty in local modes, whose pushes carry a delta.
  Samples SamplesOf(const sync::PushInfo& push);
  // acc += weight * the payload of the push being staged, the last one this
  // worker sent: the gradient over `samples` on the model the step ran on,
  // or the local step's delta (the worker awaits this push's answer, so the
  // delta is still at hand).
  void AddPush(Samples samples, float weight, std::span<float> acc);

  // What the worker did so far, for the run's report.
  const WorkerStats& stats() const { return stats_; }

 private:
  // Where the compute thread is.
  enum class Phase {
    kAwaitModel,  // pulled; waits for the model
    kCompute,     // a compute job runs
    kStraggle,    // sleeps its emulated slowness
    kUpdate,      // local modes: the local optimizer step runs
    kTransfer,    // sleeps the bandwidth cap's transfer time, then sends the push
    kAwaitReply,  // local and token: pushed; waits for Continue (or Model)
  };
  // Where local-overlap's communication thread is.
  enum class CommPhase { kIdle, kTransfer, kAwaitContinue, kAwaitModel };

  // acc += weight * the payload of the push being staged, as it was computed.
  void AddPayload(float weight, std::span<float> acc);
  // AddPush under a push codec: the payload through this worker's error
  // feedback, each server shard's slice on its own, decoded into acc.
  void AddEncodedPush(float weight, std::span<float> acc);

  // Replies.
  void ReceiveModel(Message& message);
  void ReceiveContinue(const Message& message);
  void Pull();

  // The compute thread's step.
  void StartStep();
  void StartChunk();
  void OnComputeDone();
  void OnStraggleDone();
  void OnUpdateDone();
  void StartPush();
  void OnTransferDone();

  // local-overlap's communication thread.
  void MaybeCommPush();
  void OnCommTransferDone();

  // Sleeps `thread` the bandwidth cap's time to send outgoing_'s payload,
  // then sends it (OnWake). REQUIRES: the thread's phase says it transfers.
  void Transfer(WorkerThread thread);
  // Sends the push `outgoing_`, counting it.
  void SendPush();
  // Ends the run: the server broke the protocol as this worker sees it.
  void FailInternal(std::string_view what);
  int64_t PayloadBytes() const {
    return MessageBytes(config_.push_codec,
                        config_.payload_params > 0 ? config_.payload_params : num_params_);
  }
  // Whether this worker's steps are computed lazily (sync, chunked, token).
  bool Lazy() const {
    return mode_ == sync::WorkerMode::kSync || mode_ == sync::WorkerMode::kChunked ||
           mode_ == sync::WorkerMode::kToken;
  }
  // local-sgd: local steps per push, H unless the server said otherwise.
  int64_t LocalSteps() const {
    return local_steps_ > 0 ? local_steps_ : config_.policy.local_steps;
  }

  const SimConfig& config_;
  const sync::WorkerMode mode_;
  const int64_t rank_;
  const int64_t num_params_;
  StepMath& math_;
  WorkerHost& host_;

  int64_t shard_first_ = 0;
  worker::EpochCursor cursor_;
  StepTiming timing_;  // of the step under way

  Phase phase_ = Phase::kAwaitModel;
  int64_t clock_ = 0;  // pushes sent
  int64_t version_ = 0;
  int64_t batch_ = 0;
  int64_t token_ = -1;
  int64_t sync_round_ = -1;
  std::shared_ptr<const std::vector<float>> model_;  // sync, chunked, token: the model steps run on

  double wait_start_ = 0;
  // When the latest reply (a model or a Continue) arrived: a push's cycle is
  // timed from it to the push leaving, after its transfer.
  double replied_at_ = 0;
  double last_comm_s_ = 0;   // the previous push's transfer, sent with the next push
  sync::PushInfo outgoing_;  // the push being sent

  // Local modes: the local copy and its momentum, and the local steps
  // computed (local-overlap and local-sgd count steps so).
  std::vector<float> params_;
  std::vector<float> velocity_;
  int64_t compute_steps_ = 0;
  // local-overlap: the hand-over and the communication thread.
  OverlapHandover handover_;
  CommPhase comm_ = CommPhase::kIdle;
  // local-sgd: the round, and its local steps as the server last set them (0: H).
  LocalSgdRound round_;
  int64_t local_steps_ = 0;

  // Under a push codec: the server shards' bounds (server::ShardBounds) and
  // the error feedback of each shard's slice.
  std::vector<int64_t> slice_bounds_;
  std::vector<compress::ErrorFeedback> feedback_;

  WorkerStats stats_;
};

}  // namespace dmlps::sim

#endif  // DMLPS_SIM_WORKER_H_
