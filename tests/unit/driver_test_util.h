// A policy in the real driver with a sink that records what it is asked to
// do, for the tests that play workers against a policy: they look at the
// effects the server would carry out, never at the policy's actions.
#ifndef DMLPS_TESTS_UNIT_DRIVER_TEST_UTIL_H_
#define DMLPS_TESTS_UNIT_DRIVER_TEST_UTIL_H_

#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "dmlps/sync/driver.h"
#include "dmlps/sync/policy.h"
#include "policy_test_util.h"

namespace dmlps::sync::testing {

// One effect the driver asked of its sink; a push's payload is an integer
// the test picks (the version a gradient was computed on, a tag).
namespace effect {
struct Staged {
  WorkerId worker = -1;
  int64_t clock = 0;  // in the worker's own count of its pushes
  int64_t payload = 0;
  double weight = 0;
};
struct Applied {
  double scale = 0;
  bool with_optimizer = true;  // false: a delta (ApplyDelta)
  int64_t version = 0;         // the model's version once applied
};
struct ModelSent {
  WorkerId worker = -1;
  Reply reply;
};
struct Continued {
  WorkerId worker = -1;
  bool download = false;
  Reply reply;
};
struct SyncNowSent {
  WorkerId worker = -1;
  int64_t round = 0;  // in the worker's own count
};
struct Dropped {
  WorkerId worker = -1;
  Drop drop;
};
struct EvaluationAsked {
  bool must = false;
};
struct LimitReached {};
struct HoldChanged {
  bool holding = false;
  int64_t live = 0;
};
struct Switched {
  Switch change;
};
struct Decided {
  Decision decision;
};
}  // namespace effect

using Effect =
    std::variant<effect::Staged, effect::Applied, effect::ModelSent, effect::Continued,
                 effect::SyncNowSent, effect::Dropped, effect::EvaluationAsked,
                 effect::LimitReached, effect::HoldChanged, effect::Switched, effect::Decided>;
using Effects = std::vector<Effect>;

// The one sink the tests' drivers record through, its three parts in one:
// every effect, in the order the driver asked for it.
class RecordingSink : public ReplySink, public UpdateSink<int64_t>, public RunEvents {
 public:
  void Stage(const HandledPush<int64_t>& push, double weight) override;
  void Apply(double scale, bool with_optimizer, int64_t version) override;
  void SendModel(WorkerId w, const Reply& reply) override;
  void SendContinue(WorkerId w, bool download, const Reply& reply) override;
  void SendSyncNow(WorkerId w, int64_t round) override;
  void Dropped(WorkerId w, const Drop& drop) override;
  void Evaluate(bool must) override;
  void LimitReached() override;
  void IterationAdvanced() override { ++advanced_; }
  void HoldChanged(bool holding, int64_t live) override;
  void Switched(const Switch& change) override;
  void Decided(const Decision& decision) override;

  // The effects recorded since the last call, in order.
  Effects Take();
  // How many times the global iteration moved on.
  int64_t advanced() const { return advanced_; }

 private:
  Effects effects_;
  int64_t advanced_ = 0;
};

// WorkerOf (policy_test_util.h) tells the worker an effect addresses.

// The effects of type T (for worker w, unless w < 0), in order.
template <typename T>
std::vector<T> All(const Effects& effects, WorkerId w = -1) {
  std::vector<T> found;
  for (const Effect& e : effects) {
    if (const T* t = std::get_if<T>(&e); t != nullptr && (w < 0 || WorkerOf(e) == w)) {
      found.push_back(*t);
    }
  }
  return found;
}

// Effects of type T (for worker w, unless w < 0).
template <typename T>
int64_t Count(const Effects& effects, WorkerId w = -1) {
  return static_cast<int64_t>(All<T>(effects, w).size());
}

// Checks that `effects` hold only what a worker of a plain round policy
// (pull, step, push, pull) expects: no go-ahead, no SyncNow, no delta, no
// switch or decision, and replies that set no batch, token or local steps.
void CheckPlainRoundEffects(const Effects& effects);

// Each effect as a line, for exact comparisons that print well:
// "model 1 v2 b0 t-1", "stage 0 c3 p7 x1", "apply 0.5 v3", "drop 2 late"...
std::vector<std::string> Describe(const Effects& effects);

// A policy in a driver whose sink records, with workers 0..n-1 attached
// (each with `info`); nothing starts until the test calls driver.Start().
// What the calls do is in sink, until taken.
class DrivenPolicy {
 public:
  // The policy `config` names, as the server makes it (auto included).
  explicit DrivenPolicy(const PolicyConfig& config, const DriverOptions& options = {},
                        const WorkerInfo& info = {});
  DrivenPolicy(std::unique_ptr<Policy> policy, const DriverOptions& options = {},
               const WorkerInfo& info = {});
  DrivenPolicy(const DrivenPolicy&) = delete;
  DrivenPolicy& operator=(const DrivenPolicy&) = delete;

  const Policy& policy() const { return driver.policy(); }
  // The policy, which must be a P.
  template <typename P>
  const P& policy_as() const {
    const auto* p = dynamic_cast<const P*>(&driver.policy());
    REQUIRE(p != nullptr);
    return *p;
  }
  int64_t num_workers() const { return driver.policy().num_workers(); }
  // Worker w pushes, tagged `payload`; then the driver advances, as the
  // server has it after every push.
  PushOutcome Push(WorkerId w, const PushInfo& push, int64_t payload = 0);
  // Every worker asks for the model, then training starts; returns the
  // effects (the pulls' answers, the first evaluation).
  Effects StartPulled();
  // The effects since the last Take.
  Effects Take() { return sink.Take(); }

  RecordingSink sink;
  PolicyDriver<int64_t> driver;
};

}  // namespace dmlps::sync::testing

#endif  // DMLPS_TESTS_UNIT_DRIVER_TEST_UTIL_H_
