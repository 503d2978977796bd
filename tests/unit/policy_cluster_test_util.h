// Clusters of workers played through a policy driver, for the policy tests:
// the fixture they share, and the step times of the workers they play.
#ifndef DMLPS_TESTS_UNIT_POLICY_CLUSTER_TEST_UTIL_H_
#define DMLPS_TESTS_UNIT_POLICY_CLUSTER_TEST_UTIL_H_

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "dmlps/sync/driver.h"
#include "dmlps/sync/policy.h"
#include "policy_test_util.h"

namespace dmlps::sync::testing {

// A policy driver whose sinks are the cluster itself: the base of the
// tests' clusters, which play the workers the way the server's do. An
// effect a cluster does not expect (does not override) fails the test.
template <typename Payload, typename P = Policy>
class ScriptedCluster : public ReplySink, public UpdateSink<Payload>, public RunEvents {
 public:
  const P& policy() const { return *policy_; }

 protected:
  // The policy `config` names, which must be a P, in a driver with the
  // default options; no worker attached yet.
  explicit ScriptedCluster(const PolicyConfig& config) {
    Result<std::unique_ptr<Policy>> made = MakePolicy(config);
    REQUIRE(made.ok());
    driver_.emplace(std::move(made).value(), DriverOptions{},
                    DriverSinks<Payload>{.replies = *this, .updates = *this, .events = *this});
    policy_ = dynamic_cast<const P*>(&driver_->policy());
    if constexpr (!std::is_same_v<P, Policy>) REQUIRE(policy_ != nullptr);
    waiting_.assign(driver_->policy().num_workers(), false);
  }

  // Plays the workers in virtual time until `iterations` rounds have
  // completed in all: each pulls (on the first call), then StepEnded comes
  // whenever the work a worker started on time_ is done.
  void Run(int64_t iterations) {
    if (!started_) {
      started_ = true;
      for (WorkerId w = 0; w < policy_->num_workers(); ++w) Pull(w);
    }
    while (policy_->iteration() < iterations) {
      REQUIRE_FALSE(time_.empty());  // every worker waiting: a deadlock
      StepEnded(time_.Next());
    }
  }
  // Worker w asks for the model, and waits until the answer comes.
  void Pull(WorkerId w) {
    waiting_[w] = true;
    driver_->Pull(w);
    AfterEvent();
  }
  // Worker w's work on time_ is done: it pushes, from Run.
  virtual void StepEnded(WorkerId w) { FAIL("no work was started for worker " << w); }
  // Checks what must hold after each event the cluster plays (a pull, a push).
  virtual void AfterEvent() {}

  // The driver's sinks: what no cluster here expects.
  void SendContinue(WorkerId w, bool /*download*/, const Reply& /*reply*/) override {
    FAIL("unexpected Continue for worker " << w);
  }
  void SendSyncNow(WorkerId w, int64_t /*round*/) override {
    FAIL("unexpected SyncNow for worker " << w);
  }
  void Dropped(WorkerId w, const Drop& drop) override {
    FAIL("unexpected drop for worker " << w << ": " << drop.reason);
  }
  void Evaluate(bool /*must*/) override {}

  std::optional<PolicyDriver<Payload>> driver_;
  const P* policy_ = nullptr;  // the driver's
  VirtualTime time_;
  // Per worker: it asked (pulled, or pushed where a push asks for the next
  // step) and has no answer yet.
  std::vector<bool> waiting_;

 private:
  bool started_ = false;
};

// Seconds worker w takes for `samples` samples in its step number `step`.
using StepTime = std::function<double(WorkerId w, int64_t samples, int64_t step)>;

// CPU-like: time linear in the batch, plus a small fixed cost per step.
inline StepTime Linear(std::vector<double> per_sample, double overhead = 0) {
  return [=](WorkerId w, int64_t samples, int64_t) {
    return overhead + static_cast<double>(samples) * per_sample[w];
  };
}

// GPU-like: below the batch that saturates the device a step costs the same
// (launch overhead, idle cores); above it, time grows with the batch.
inline StepTime Saturating(std::vector<double> per_sample, double floor_s) {
  return [=](WorkerId w, int64_t samples, int64_t) {
    return std::max(floor_s, static_cast<double>(samples) * per_sample[w]);
  };
}

// Seconds per sample: three workers at 1 ms, worker 3 four times slower.
inline const std::vector<double> kOneSlow = {0.001, 0.001, 0.001, 0.004};

}  // namespace dmlps::sync::testing

#endif  // DMLPS_TESTS_UNIT_POLICY_CLUSTER_TEST_UTIL_H_
