// Synchronization policies as pure state machines: fed events (a worker
// joined, a push arrived, a pull was requested), they answer with actions for
// the server to carry out. A policy never touches a socket, a clock or a
// thread, so the server, the simulator and the unit tests drive the same code.
#ifndef DMLPS_SYNC_POLICY_H_
#define DMLPS_SYNC_POLICY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/base/status.h"

namespace dmlps::sync {

using WorkerId = int64_t;

// What a policy needs to know about one push.
struct PushInfo {
  int64_t clock = 0;         // the worker's step this push finishes (0-based)
  int64_t base_version = 0;  // model version the gradient was computed on
  int64_t samples = 0;       // samples behind the (mean) gradient
  // False when the server refused the payload (non-finite values): the step
  // counts as done but contributes nothing to the model.
  bool usable = true;
};

struct Action {
  enum class Kind {
    kStage,       // acc += weight * (the gradient of the push being handled)
    kApply,       // model <- optimizer(model, scale * acc); acc <- 0; version + 1
    kReplyModel,  // answer worker's waiting pull with the current model
    kHold,        // worker's pull waits
    kDrop,        // the push being handled is discarded; reason says why
  };
  Kind kind;
  WorkerId worker = -1;
  double value = 0;  // Stage: weight; Apply: scale
  std::string reason;

  static Action Stage(WorkerId w, double weight) { return {Kind::kStage, w, weight, {}}; }
  static Action Apply(double scale) { return {Kind::kApply, -1, scale, {}}; }
  static Action ReplyModel(WorkerId w) { return {Kind::kReplyModel, w, 0, {}}; }
  static Action Hold(WorkerId w) { return {Kind::kHold, w, 0, {}}; }
  static Action Drop(WorkerId w, std::string why) { return {Kind::kDrop, w, 0, std::move(why)}; }
};

using Actions = std::vector<Action>;

struct PolicyConfig {
  std::string name = "bsp";  // bsp | asp | ssp
  int64_t num_workers = 1;
  int64_t staleness = 3;     // ssp: how many clocks ahead of the slowest a worker may run
};

class Policy {
 public:
  virtual ~Policy() = default;

  virtual std::string Name() const = 0;

  // Worker `w` is part of the run from clock 0. REQUIRES: w in [0, num_workers).
  void WorkerJoined(WorkerId w, Actions* out);
  // Worker `w` finished a step. A push whose clock is not the worker's next one
  // is dropped; otherwise the policy stages, applies and releases pulls.
  void PushArrived(WorkerId w, const PushInfo& push, Actions* out);
  // Worker `w` wants the model for its next step: replied to now or held.
  void PullRequested(WorkerId w, Actions* out);

  // Applies made so far = the version of the model the server holds.
  int64_t version() const { return version_; }
  // Pushes worker `w` has completed.
  int64_t clock(WorkerId w) const { return workers_[w].clock; }
  // The slowest joined worker's clock.
  int64_t MinClock() const;
  int64_t num_workers() const { return static_cast<int64_t>(workers_.size()); }

 protected:
  explicit Policy(int64_t num_workers) : workers_(num_workers) {}

  // Policy-specific handling of a push already accepted in clock order.
  virtual void OnPush(WorkerId w, const PushInfo& push, Actions* out) = 0;
  // Whether a worker at clock `c` may start its next step now.
  virtual bool MayStart(WorkerId w) const = 0;
  // Extra checks before a push is accepted; an empty string accepts it.
  virtual std::string Refuse(WorkerId w, const PushInfo& push) const { return {}; }

  // Emits Apply and counts the new version.
  void EmitApply(double scale, Actions* out);
  // Answers every held pull whose worker may now start.
  void ReleaseHeld(Actions* out);
  int64_t joined_count() const;

 private:
  struct WorkerState {
    bool joined = false;
    bool pull_held = false;
    int64_t clock = 0;
  };
  std::vector<WorkerState> workers_;
  int64_t version_ = 0;
};

// Bulk synchronous: all N pushes of an iteration, computed on the same
// version, are averaged sample-weighted and applied once.
class BspPolicy : public Policy {
 public:
  explicit BspPolicy(int64_t num_workers) : Policy(num_workers) {}
  std::string Name() const override { return "bsp"; }

 protected:
  void OnPush(WorkerId w, const PushInfo& push, Actions* out) override;
  bool MayStart(WorkerId w) const override;
  std::string Refuse(WorkerId w, const PushInfo& push) const override;

 private:
  int64_t round_ = 0;  // completed iterations
  int64_t arrived_ = 0;
  int64_t staged_samples_ = 0;
};

// Stale synchronous with bound s: pushes apply on arrival (scaled 1/N) and a
// worker may start clock c only while c - MinClock() <= s. Asynchronous is the
// same with no bound.
class SspPolicy : public Policy {
 public:
  // staleness < 0 means unbounded (ASP).
  SspPolicy(int64_t num_workers, int64_t staleness) : Policy(num_workers), staleness_(staleness) {}
  std::string Name() const override;

 protected:
  void OnPush(WorkerId w, const PushInfo& push, Actions* out) override;
  bool MayStart(WorkerId w) const override;

 private:
  int64_t staleness_;
};

// Builds the policy `config` names; InvalidArgument for an unknown name or
// settings that do not fit it.
Result<std::unique_ptr<Policy>> MakePolicy(const PolicyConfig& config);

// The names MakePolicy accepts, for help texts.
std::string_view PolicyNames();

}  // namespace dmlps::sync

#endif  // DMLPS_SYNC_POLICY_H_
