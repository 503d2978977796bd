// The worker's step loops, one per sync::WorkerMode, over a ServerLink and
// a StepComputer.
#ifndef DMLPS_WORKER_STEPS_H_
#define DMLPS_WORKER_STEPS_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/proto/codec.h"
#include "dmlps/sync/policy.h"
#include "dmlps/trace/trace.h"
#include "dmlps/worker/worker.h"
#include "worker/compute.h"
#include "worker/link.h"

namespace dmlps::worker {

// What the steps follow from the server's replies, and what the pushes
// report of earlier ones; it outlives a loop, so a rejoin goes on from it.
struct StepState {
  int64_t version = 0;      // of the model last received
  int64_t batch = 0;        // samples per step, as the server last set it
  int64_t token = -1;       // token granted with the last reply
  int64_t local_steps = 0;  // local-sgd: steps per push as the server last set it; 0: none yet
  int64_t comm_us = 0;  // time the last send took less its wait for a core, sent with the next push
  int64_t bytes_sent = 0;  // payload bytes pushed so far
  UsageMeter usage;
};

// What every mode's loop works with, and the parts they share: downloading
// the model, pushing a step, counting it.
class StepContext {
 public:
  // All of them outlive this; `tracer` may be null (no --trace).
  StepContext(ServerLink& link, StepComputer& computer, StepState& state,
              trace::TraceWriter* tracer, WorkerReport& report)
      : link_(link), computer_(computer), state_(state), tracer_(tracer), report_(report) {}

  // Sends Pull (unless `pulled`: sent with the push) and waits for the model
  // or Stop; copies the model into params. False when the server stopped.
  // Into *waited_us, if given, the microseconds it waited, which the next push reports.
  Result<bool> Download(int64_t clock, std::span<float> params, bool pulled = false,
                        int64_t* waited_us = nullptr);
  // Copies a Model message's payload into params and notes its version,
  // batch and token.
  Status TakeModel(proto::Message& message, std::span<float> params);
  // Sends a push and its payload, after the emulated transfer time; `then`
  // as ServerLink::SendPush.
  Status Push(proto::Push push, std::shared_ptr<const std::vector<float>> payload,
              const proto::Body* then = nullptr);
  // The push that reports `step`, the worker's step number `clock`, on the
  // model last received, after waiting `wait_us` for the server.
  proto::Push PushFor(int64_t clock, int64_t batch, const StepResult& step, int64_t wait_us) const;
  // Counts a computed step into the report.
  void Count(const StepResult& step);
  // Counts `wait_us` spent waiting for the answer to push `clock`.
  void CountReplyWait(int64_t clock, int64_t asked_us, int64_t wait_us);

  // The parts a loop drives directly.
  ServerLink& link() { return link_; }
  StepComputer& computer() { return computer_; }
  StepState& state() { return state_; }
  WorkerReport& report() { return report_; }

 private:
  ServerLink& link_;
  StepComputer& computer_;
  StepState& state_;
  trace::TraceWriter* tracer_;
  WorkerReport& report_;
};

// Where the module state begins in the flat vector of `welcome`'s model
// (Welcome::num_state): a local step moves the floats before it; the state
// after it is what the computation left in the gradient, pushed as it is.
inline int64_t StateBegin(const proto::Welcome& welcome) {
  return welcome.num_params - welcome.num_state;
}
// One local step of the worker's optimizer (optim::LocalMomentumStep) on
// params[0, state_begin); the state after it is taken from grad.
void LocalStateStep(std::span<float> params, std::span<float> velocity, std::span<const float> grad,
                    float lr, float mu, int64_t state_begin);
// One local step of `steps`' worker: the computation's own when it takes
// them (Computation::TakesLocalSteps), else LocalStateStep with the
// Welcome's learning rate and momentum.
Status TakeLocalStep(StepContext& steps, std::span<float> params, std::span<float> velocity,
                     std::span<const float> grad);
// What a local mode (wbsp, localsgd, async-localsgd) trains its copy of
// the model in, made at the size of `computer`'s model.
struct LocalCopy {
  explicit LocalCopy(StepComputer& computer);

  std::vector<float> params;     // the copy
  std::vector<float> reference;  // what the next push is measured against (LocalPush)
  std::vector<float> grad;
  std::vector<float> velocity;                  // the local optimizer's, kept from step to step
  PushBuffers pushes;                           // the pushes' payloads
  std::shared_ptr<std::vector<float>> payload;  // the last push's
};
// One local step on `copy`: the gradient of `batch` samples at its params
// (the straggler profile counting it as step `step`), then TakeLocalStep.
// The step's compute includes the local update.
Result<StepResult> TrainLocalStep(StepContext& steps, int64_t step, int64_t batch, LocalCopy& copy);
// What a local mode pushes: minuend - subtrahend on [0, state_begin) (a
// delta or a pseudo-gradient), and the state's current values after it.
void LocalPush(std::span<const float> minuend, std::span<const float> subtrahend,
               std::span<const float> current, std::span<float> out, int64_t state_begin);

// Runs the loop of `mode` until the server says Stop (ok) or something
// fails; a server gone silent shows in link().server_lost(). Protocol when
// the Welcome lacks what the mode needs (a chunk or a token size).
Status RunSteps(sync::WorkerMode mode, StepContext& steps);

// The loops, one per mode, as RunSteps.
// Bulk-synchronous family (sync; chunked: A-BSP, stopping early on SyncNow).
Status RunSyncSteps(StepContext& steps, bool chunked);
// WBSP: a local copy trained step by step, its deltas pushed.
Status RunLocalSteps(StepContext& steps);
// WBSP with compute and communication on two threads.
Status RunLocalOverlapSteps(StepContext& steps);
// Fela's tokens: one push per token the server grants.
Status RunTokenSteps(StepContext& steps);
// Local SGD (localsgd, async-localsgd): H local steps on a copy, then one
// push of the pseudo-gradient and a pull of the model; H as the Welcome
// says, or as the last model's reply set it (DyLU).
Status RunLocalSgdSteps(StepContext& steps);

}  // namespace dmlps::worker

#endif  // DMLPS_WORKER_STEPS_H_
