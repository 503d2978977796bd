// A policy made of policies: it runs one inner policy and, when its decider
// asks, drains to a quiescent point and goes on under another. The decision
// (when, to what) is the decider's; the mechanics (how to change safely) are
// SwitchingPolicy's, so that any decision function can drive them
// (docs/algorithms.md, "Sync-Switch").
#ifndef DMLPS_SYNC_SWITCHING_H_
#define DMLPS_SYNC_SWITCHING_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/sync/policy.h"

namespace dmlps::sync {

// A decider's answer: change to the policy MakePolicy calls `to`.
struct SwitchRequest {
  std::string to;
  std::string why;       // the rule that fired, in words
  double measured = 0;   // the value the rule looked at
  double threshold = 0;  // the value it crossed
};

// What a decider is told along with each event.
struct SwitchContext {
  std::string_view running;        // the inner policy's name (MakePolicy's), e.g. "bsp"
  int64_t iteration = 0;           // the run's global iteration
  const Policy* policy = nullptr;  // the switching policy: clocks, live workers
};

// When to switch, and to what. Pure: fed events, it answers with requests.
// A request while a switch drains, or for the policy already running, is
// ignored.
class SwitchDecider {
 public:
  virtual ~SwitchDecider() = default;
  // The switching policy's name under this decider (e.g. "sync-switch:0.125").
  virtual std::string Name() const = 0;
  // The policy to start with.
  virtual std::string Initial() const = 0;
  // Worker w's push was accepted and handled by the inner policy.
  virtual std::optional<SwitchRequest> AfterPush(const SwitchContext& context, WorkerId w,
                                                 const PushInfo& push) = 0;
  // An evaluation came out at `accuracy`.
  virtual std::optional<SwitchRequest> AfterEvaluation(const SwitchContext& context,
                                                       double accuracy) = 0;
  // The switch to `now_running` is done.
  virtual void Switched(std::string_view now_running) {}
  // Worker w joined (again) with `info`; worker w is gone; one more rank exists.
  virtual void WorkerJoined(WorkerId w, const WorkerInfo& info) {}
  virtual void WorkerGone(WorkerId w) {}
  virtual void RankAdded() {}
  // The decisions taken since the last call (switch or stay), oldest first,
  // for the log and the trace; deciders that keep none return nothing.
  virtual std::vector<Decision> TakeDecisions() { return {}; }
};

// Makes the inner policy MakePolicy calls `name`, for `num_workers` ranks.
using InnerPolicyMaker =
    std::function<Result<std::unique_ptr<Policy>>(std::string_view name, int64_t num_workers)>;

// Runs one inner policy at a time. Events go to the inner policy, with
// clocks and versions translated (each inner policy counts from 0 from the
// moment it starts); its actions come back with the same translation. On a
// decider's request the switch drains: from then on a worker's pull is held
// here, unless the inner policy still needs that worker's push to finish
// an update in progress (a round), until every live worker waits here and
// nothing is staged. Then every accepted push is in the model, no worker is
// computing, and the new inner policy starts with all of them on the same
// model. Pushes arriving during the drain are the old policy's.
class SwitchingPolicy : public Policy {
 public:
  // REQUIRES: make(decider->Initial(), num_workers) succeeds, and so does
  // make for every name the decider may request, each of the same mode and
  // each telling its round boundaries by Policy::AtBoundary (BSP and the
  // policies applying pushes on arrival do; others keep the default, true).
  // `batch`: the workers' batch when the policy running sets none; a worker
  // whose batch an inner policy changed (lbbsp) is told it again when the
  // next one starts (0: no inner policy changes batches).
  SwitchingPolicy(int64_t num_workers, std::unique_ptr<SwitchDecider> decider,
                  InnerPolicyMaker make, int64_t batch = 0);
  std::string Name() const override { return decider_->Name(); }
  WorkerMode mode() const override { return inner_->mode(); }
  int64_t iteration() const override { return iteration_offset_ + inner_->iteration(); }
  // The inner policy's name now, MakePolicy's (e.g. "bsp").
  const std::string& running() const { return running_; }
  // Whether a switch was decided and is draining.
  bool switching() const { return pending_.has_value(); }
  // Switches done so far.
  int64_t switches() const { return switches_; }

 protected:
  void OnJoin(WorkerId w, const WorkerInfo& info, Actions* out) override;
  void OnLeave(WorkerId w, Actions* out) override;
  void OnAddWorker() override;
  void OnRestore(const PolicyState& state) override;
  void OnPush(WorkerId w, const PushInfo& push, Actions* out) override;
  bool MayStart(WorkerId w) const override;
  std::string Refuse(WorkerId w, const PushInfo& push) const override;
  void OnPull(WorkerId w, Actions* out) override;
  void OnEvaluation(double accuracy, Actions* out) override;
  bool AtBoundary() const override { return !pending_ && inner_->AtBoundary(); }

 private:
  SwitchContext Context() const;
  // `push` in the inner policy's counts.
  PushInfo Translate(WorkerId w, const PushInfo& push) const;
  // Carries the inner policy's actions over: its updates counted here, its
  // rounds in this policy's clocks.
  void Forward(const Actions& inner, Actions* out);
  void Request(const std::optional<SwitchRequest>& request, Actions* out);
  // The decider's decisions, as Decision actions.
  void Report(Actions* out);
  // During a drain: hands the inner policy the held pulls it needs to
  // finish an update in progress; switches once quiescent.
  void Drain(Actions* out);
  void Finish(Actions* out);
  // Hands every pull held here to the inner policy (its answers into *inner).
  void AnswerHeld(Actions* inner);

  std::unique_ptr<SwitchDecider> decider_;
  InnerPolicyMaker make_;
  std::unique_ptr<Policy> inner_;
  std::string running_;
  std::optional<SwitchRequest> pending_;
  std::vector<bool> held_;        // pull held here by a drain
  std::vector<int64_t> offset_;   // this policy's clock minus the inner one's
  std::vector<WorkerInfo> info_;  // as the worker joined, for the next inner policy
  std::vector<bool> batch_set_;   // an inner policy changed the worker's batch
  int64_t batch_ = 0;
  int64_t version_offset_ = 0;    // version when the inner policy started
  int64_t iteration_offset_ = 0;  // iteration when the inner policy started
  int64_t switches_ = 0;
};

// A decision in one line, as the server logs it and the simulator with -v:
// the iteration, running -> chosen, the reason, what was measured and each
// candidate's predicted seconds per BSP-equivalent iteration.
std::string DescribeDecision(const Decision& decision);
// Its predictions alone: "bsp=0.0123 backup:1=0.0101 ...".
std::string DescribePredictions(const Decision& decision);

}  // namespace dmlps::sync

#endif  // DMLPS_SYNC_SWITCHING_H_
