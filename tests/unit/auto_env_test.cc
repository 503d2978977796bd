// auto's decider on an Env the test holds: its clock and the thread it
// predicts on are injected, so that the server's way of deciding (in the
// background, within a budget of the wall clock) runs deterministically
// here (docs/auto.md, "Where it predicts").
#include <doctest/doctest.h>

#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>

#include "auto_run_test_util.h"
#include "dmlps/auto/auto.h"

namespace dmlps::sync::testing {
namespace {

// A clock that moves `step_ms` each time it is read, and predictions run
// at once, on the caller's thread, when started.
class SteppingEnv : public autopolicy::Env {
 public:
  explicit SteppingEnv(double step_ms) : step_ms_(step_ms) {}
  double NowMs() override { return now_ms_ += step_ms_; }
  std::optional<std::future<void>> Start(std::function<void()> work) override {
    ++started_;
    std::promise<void> done;
    work();
    done.set_value();
    return done.get_future();
  }
  int started() const { return started_; }

 private:
  double step_ms_;
  double now_ms_ = 0;
  int started_ = 0;
};

// Worker 3 of four 4x slow: auto leaves bsp for a policy that does not wait for it.
double Straggler(WorkerId w, int64_t /*step*/) { return w == 3 ? 0.04 : 0.01; }

TEST_CASE("auto env: in the background a decision is chosen a boundary after it was read") {
  AutoRunOptions options;
  options.background = true;
  auto env = std::make_shared<SteppingEnv>(0);
  options.env = env;
  const AutoRun background = RunAuto(4, Straggler, 3.0, options);
  REQUIRE_FALSE(background.decisions.empty());
  // One prediction started per decision (the last may be in flight at the end).
  CHECK(env->started() >= static_cast<int>(background.decisions.size()));
  CHECK(env->started() <= static_cast<int>(background.decisions.size()) + 1);
  for (const Decision& d : background.decisions) {
    CAPTURE(d.measured);
    CHECK(d.measured.starts_with("at iteration "));
  }
  // Within the push, on the same readings, it chooses alike.
  options.background = false;
  options.env = std::make_shared<SteppingEnv>(0);
  const AutoRun in_push = RunAuto(4, Straggler, 3.0, options);
  REQUIRE_FALSE(in_push.switches.empty());
  REQUIRE_FALSE(background.switches.empty());
  CHECK(background.switches.front().to == in_push.switches.front().to);
  // And the same Env gives the same run.
  options.background = true;
  options.env = std::make_shared<SteppingEnv>(0);
  const AutoRun again = RunAuto(4, Straggler, 3.0, options);
  CHECK(again.decisions.size() == background.decisions.size());
  CHECK(again.running == background.running);
}

TEST_CASE("auto env: the prediction budget runs on the Env's clock") {
  // Each reading of the clock moves it 40 ms: a prediction takes 40 ms (two
  // readings), and the run's clock moves only as auto reads it (once at
  // each boundary where a decision is due). Predictions then take a large
  // share of it, and once they have spent the allowance (kPredictAllowanceMs,
  // three of them) a decision due waits until kPredictShare of the clock
  // covers what they took.
  AutoRunOptions options;
  options.background = true;
  options.every = 5;
  options.env = std::make_shared<SteppingEnv>(40);
  const AutoRun bounded = RunAuto(4, Straggler, 3.0, options);
  // A clock that stands still leaves the decisions unbounded.
  options.env = std::make_shared<SteppingEnv>(0);
  const AutoRun unbounded = RunAuto(4, Straggler, 3.0, options);
  REQUIRE(bounded.decisions.size() >= 4);
  REQUIRE(unbounded.decisions.size() > bounded.decisions.size());
  for (size_t i = 0; i < 3; ++i) {
    CHECK(bounded.decisions[i].iteration == unbounded.decisions[i].iteration);
  }
  const auto gap = [](const AutoRun& run) {
    return run.decisions[3].iteration - run.decisions[2].iteration;
  };
  CHECK(gap(unbounded) <= options.every + 1);
  CHECK(gap(bounded) > gap(unbounded) + 5);
}

}  // namespace
}  // namespace dmlps::sync::testing
