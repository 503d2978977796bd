// One layer above the policies: a PolicyDriver feeds a policy its events,
// carries out the actions it answers with through its sinks, and keeps the
// per-worker state replies need (a pull waiting, the batch size and token
// to send with the next reply, the offset between a worker's own step
// count and the policy's clock, replies held while training holds). The
// server, the simulator, the transport bench and the tests' scripted
// clusters each implement the sinks; none of them looks at actions itself.
#ifndef DMLPS_SYNC_DRIVER_H_
#define DMLPS_SYNC_DRIVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "dmlps/sync/policy.h"

namespace dmlps::sync {

// What a reply to a worker carries besides the model or the go-ahead.
struct Reply {
  int64_t version = 0;      // the model's version when the reply went out
  int64_t batch = 0;        // the worker's batch size from now on; 0: unchanged
  int64_t token = -1;       // the token the worker trains next; -1: none
  int64_t local_steps = 0;  // local steps per push from now on; 0: unchanged
};

// The push a driver is handling, as UpdateSink::Stage sees it.
template <typename Payload>
struct HandledPush {
  WorkerId worker = -1;
  int64_t clock = 0;       // in the worker's own count of its pushes
  const Payload& payload;  // what the caller handed to PolicyDriver::Push
};

// The driver's sinks, the effects of a policy's actions in three parts:
// the replies to the workers, the updates of the model, and what the run
// hears of its progress. A user of a driver may implement them in one class
// (the simulator, the transport bench, the tests' clusters) or in three (the
// server: its worker desk, its model updates, its run). Workers named are
// present (attached, not lost).

// What the workers are sent.
class ReplySink {
 public:
  virtual ~ReplySink() = default;
  // Sends worker w the current model; its pull is answered.
  virtual void SendModel(WorkerId w, const Reply& reply) = 0;
  // Answers worker w's push: go on with its model, `download` it first.
  virtual void SendContinue(WorkerId w, bool download, const Reply& reply) = 0;
  // Tells worker w to push once its current chunk is done; `round` in the
  // worker's own count of its pushes.
  virtual void SendSyncNow(WorkerId w, int64_t round) = 0;
  // The push being handled, worker w's, is dropped (see Drop).
  virtual void Dropped(WorkerId w, const Drop& drop) = 0;
};

// What becomes of the model: pushes staged into an accumulator, which an
// update applies. The payload's type is the user's (a gradient, sample
// indices, nothing).
template <typename Payload>
class UpdateSink {
 public:
  virtual ~UpdateSink() = default;
  // acc += weight * push.payload.
  virtual void Stage(const HandledPush<Payload>& push, double weight) = 0;
  // model <- optimizer(model, scale * acc) (with_optimizer) or
  // model + scale * acc; acc <- 0. The model becomes `version`, which the
  // policy has counted already.
  virtual void Apply(double scale, bool with_optimizer, int64_t version) = 0;
};

// What the run hears of the policy's progress.
class RunEvents {
 public:
  virtual ~RunEvents() = default;
  // Evaluates the current model; `must` ones (the first, the last) are
  // never skipped.
  virtual void Evaluate(bool must) = 0;
  // The iteration limit is reached: called once, before the last Evaluate.
  virtual void LimitReached() {}
  // The global iteration moved on (the moment checkpoints are due by).
  virtual void IterationAdvanced() {}
  // Training holds (fewer than min_workers live) or goes on; replies wait
  // meanwhile and go out, in order, before training goes on.
  virtual void HoldChanged(bool holding, int64_t live) {}
  // The policy decided to change what it runs, or changed it (see Switch):
  // to log and trace.
  virtual void Switched(const Switch& change) {}
  // The policy's decider took a decision (see Decision): to log and trace.
  virtual void Decided(const Decision& decision) {}
};

// Where a driver's effects go; each outlives the driver.
template <typename Payload>
struct DriverSinks {
  ReplySink& replies;
  UpdateSink<Payload>& updates;
  RunEvents& events;
};

struct DriverOptions {
  int64_t eval_every = 0;      // iterations between evaluations; 0: the must ones only
  int64_t max_iterations = 0;  // 0: no limit
  int64_t min_workers = 0;     // fewer live workers: training holds
};

// What became of one push.
struct PushOutcome {
  bool dropped = false;  // the policy dropped it: its samples are wasted
  bool staged = false;   // its payload went into the accumulator; else it can be let go
  int64_t samples = 0;   // the samples it contributed: 0 when dropped or unusable
};

// The driver's state and logic; PolicyDriver adds the payload's type.
class DriverCore {
 public:
  DriverCore(const DriverCore&) = delete;
  DriverCore& operator=(const DriverCore&) = delete;

  const Policy& policy() const { return *policy_; }

  // Rank w is a worker's from now on (and its data is loading): it is
  // counted from Start, or from Join once training runs.
  void Attach(WorkerId w, const WorkerInfo& info);
  // One more rank, for a worker joining a running job; returns it.
  WorkerId AddRank();
  // Training starts: every attached worker joins the policy, and the pulls
  // that arrived meanwhile are answered. Evaluates the model (must).
  void Start();
  // Attached worker w joins the running job; `worker_clock` is its own
  // count of its pushes, from which its clock offset follows.
  void Join(WorkerId w, int64_t worker_clock);
  // Worker w wants the model. Before Start it waits for Start.
  void Pull(WorkerId w);
  // Worker w is gone: nothing waits for it, nothing goes to it, what was
  // held for it is forgotten; the iteration may advance (see Advance).
  void Lose(WorkerId w);
  // Goes on from a checkpoint of `state` with `samples` trained. Before any
  // worker joins.
  void Restore(const PolicyState& state, int64_t samples);
  // Catches up with the policy's iteration: IterationAdvanced, then the
  // limit or an evaluation when due. Idempotent; call after each push.
  void Advance();
  // An evaluation RunEvents::Evaluate asked for came out at `accuracy`; in the order
  // they were asked for. Policies deciding by accuracy (sync-switch) look.
  void Evaluated(double accuracy);
  // Ends the run by a limit other than iterations (time): evaluates once
  // (must). False when the run had ended already.
  bool EndRun();

  // The policy's iteration as of the last Advance: what evaluations and
  // checkpoints are stamped with.
  int64_t iteration() const { return iteration_; }
  // Usable samples of the pushes not dropped, since the run began (resumed
  // runs: from the checkpoint's count).
  int64_t samples_applied() const { return samples_applied_; }
  // Pushes dropped, and the samples they carried: wasted work.
  int64_t dropped_pushes() const { return dropped_pushes_; }
  int64_t wasted_samples() const { return wasted_samples_; }
  bool started() const { return started_; }
  // The iteration limit was reached, or EndRun called: the run is over.
  bool limit_reached() const { return limit_reached_; }
  // Fewer than min_workers are live: replies wait.
  bool holding() const { return holding_; }
  // Workers the policy counts now.
  int64_t live_workers() const { return policy_->live_workers(); }
  // Whether the policy counts worker w (joined, not lost).
  bool active(WorkerId w) const { return slots_[w].active; }
  // Whether worker w's pull waits for its answer.
  bool pull_pending(WorkerId w) const { return slots_[w].pull_pending; }
  // Worker w's pushes as it counts them.
  int64_t worker_clock(WorkerId w) const { return policy_->clock(w) - slots_[w].clock_offset; }

 protected:
  // Stages the push being handled with the weight given.
  using StageFn = std::function<void(double weight)>;

  DriverCore(std::unique_ptr<Policy> policy, const DriverOptions& options);
  virtual ~DriverCore() = default;

  // The sinks of every effect but the model's updates, which PolicyDriver
  // carries out (ApplyStaged).
  void ConnectCore(ReplySink& replies, RunEvents& events) {
    replies_ = &replies;
    events_ = &events;
  }
  // Applies what is staged: UpdateSink::Apply, to the policy's version.
  virtual void ApplyStaged(double scale, bool with_optimizer) = 0;

  // Worker w's push; push.clock in the worker's own count.
  PushOutcome HandlePush(WorkerId w, const PushInfo& push, const StageFn& stage);

 private:
  struct Slot {
    bool present = false;       // attached, not lost
    bool active = false;        // joined in the policy
    bool pull_pending = false;  // a pull has no answer yet
    // The policy's clock minus the worker's: a worker that joins a running
    // job counts its pushes from 0, the policy from where the run stands.
    int64_t clock_offset = 0;
    int64_t next_batch = 0;        // to send with the next reply; 0: unchanged
    int64_t next_token = -1;       // to send with the next reply; -1: none
    int64_t next_local_steps = 0;  // to send with the next reply; 0: unchanged
    WorkerInfo info;
  };
  // A reply that waits while training holds: the model (ReplyModel) or the
  // go-ahead (Continue).
  struct HeldReply {
    WorkerId worker = -1;
    bool model = true;
    bool download = false;  // the go-ahead's
  };

  // Carries out `actions` in order; Stage only while a push is handled
  // (`stage` not null).
  void Carry(const Actions& actions, const StageFn* stage);
  void Do(const Stage& a, const StageFn* stage);
  void Do(const Apply& a, const StageFn* stage);
  void Do(const ApplyDelta& a, const StageFn* stage);
  void Do(const ReplyModel& a, const StageFn* stage);
  void Do(const Hold& a, const StageFn* stage);
  void Do(const Drop& a, const StageFn* stage);
  void Do(const Continue& a, const StageFn* stage);
  void Do(const SyncNow& a, const StageFn* stage);
  void Do(const SetBatch& a, const StageFn* stage);
  void Do(const Grant& a, const StageFn* stage);
  void Do(const SetLocalSteps& a, const StageFn* stage);
  void Do(const Switch& a, const StageFn* stage);
  void Do(const Decision& a, const StageFn* stage);
  bool Present(WorkerId w) const;
  // The reply fields set for w since its last reply; clears them.
  Reply TakeReply(WorkerId w);
  // Holds training while fewer than min_workers are live; sends what was
  // held once enough are back.
  void UpdateHold();

  std::unique_ptr<Policy> policy_;
  const DriverOptions options_;
  ReplySink* replies_ = nullptr;  // see ConnectCore
  RunEvents* events_ = nullptr;
  std::vector<Slot> slots_;  // by rank
  bool started_ = false;
  bool holding_ = false;
  std::vector<HeldReply> held_;  // in the order the policy sent them
  int64_t iteration_ = 0;
  int64_t next_eval_ = 0;
  bool limit_reached_ = false;
  int64_t samples_applied_ = 0;  // usable samples of the pushes not dropped
  int64_t dropped_pushes_ = 0;
  int64_t wasted_samples_ = 0;
};

// A driver whose pushes carry a `Payload` (a gradient, sample indices,
// nothing) that reaches UpdateSink::Stage with the push it belongs to.
template <typename Payload>
class PolicyDriver final : public DriverCore {
 public:
  // A driver whose effects go to `sinks`.
  PolicyDriver(std::unique_ptr<Policy> policy, const DriverOptions& options,
               const DriverSinks<Payload>& sinks)
      : DriverCore(std::move(policy), options) {
    Connect(sinks);
  }
  // A driver whose sinks are made after it, since they hold it (the
  // server's worker desk feeds the driver and sends its replies): Connect
  // them before Start.
  PolicyDriver(std::unique_ptr<Policy> policy, const DriverOptions& options)
      : DriverCore(std::move(policy), options) {}

  void Connect(const DriverSinks<Payload>& sinks) {
    ConnectCore(sinks.replies, sinks.events);
    updates_ = &sinks.updates;
  }

  // Worker w's push; push.clock in the worker's own count of its pushes.
  // Call Advance after it.
  PushOutcome Push(WorkerId w, const PushInfo& push, const Payload& payload) {
    const HandledPush<Payload> handled{w, push.clock, payload};
    const StageFn stage = [this, &handled](double weight) { updates_->Stage(handled, weight); };
    return HandlePush(w, push, stage);
  }

 private:
  void ApplyStaged(double scale, bool with_optimizer) override {
    updates_->Apply(scale, with_optimizer, policy().version());
  }

  UpdateSink<Payload>* updates_ = nullptr;  // see Connect
};

}  // namespace dmlps::sync

#endif  // DMLPS_SYNC_DRIVER_H_
