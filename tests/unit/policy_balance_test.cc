// LB-BSP and the speed predictors behind it: scripted event sequences, and a
// discrete-event driver in virtual time that plays the worker side of each
// mode, so that the invariants docs/algorithms-stragglers.md states ("LB-BSP") are
// checked on the schedules a slow worker actually produces.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "dmlps/predict/predictor.h"
#include "dmlps/sync/driver.h"
#include "dmlps/sync/lbbsp.h"
#include "dmlps/sync/policy.h"
#include "policy_cluster_test_util.h"
#include "policy_test_util.h"

namespace dmlps::sync::testing {
namespace {

PolicyConfig LbConfig(int64_t n, int64_t batch, const std::string& mode = "cpu") {
  return {.name = "lbbsp", .job = {.workers = n, .batch = batch}, .lb_mode = mode};
}

// Plays the workers of an LB-BSP run through a policy driver: pull, take the
// batch size sent with the model, compute it for step_time seconds of virtual
// time, push with that busy time, pull again. Checks every effect as it goes.
class LbCluster : private ScriptedCluster<int, LbBspPolicy> {
 public:
  LbCluster(const PolicyConfig& config, StepTime step_time, std::vector<int64_t> caps = {})
      : ScriptedCluster(config), step_time_(std::move(step_time)), caps_(std::move(caps)) {
    const int64_t n = config.job.workers;
    caps_.resize(n, 0);
    workers_.resize(n);
    busy_.resize(n);
    batches_.resize(n);
    expected_sum_ = config.job.batch * n;
    int64_t cap_sum = 0;
    bool all_capped = true;
    for (int64_t cap : caps_) {
      all_capped = all_capped && cap > 0;
      cap_sum += cap;
    }
    if (all_capped) expected_sum_ = std::min(expected_sum_, cap_sum);
    for (WorkerId w = 0; w < n; ++w) driver_->Attach(w, WorkerInfo{caps_[w]});
    driver_->Start();  // no pull yet: nothing to answer
    CHECK(applies_ == 0);
    CheckBatches();
  }

  using ScriptedCluster::policy;
  // Runs until `iterations` rounds have completed in all.
  using ScriptedCluster::Run;
  int64_t applies() const { return applies_; }
  // Worker w's batch in its step `round` (= the round, under BSP).
  int64_t batch_in(WorkerId w, int64_t round) const { return batches_[w][round]; }

  // The rounds whose batches differ from the round before's.
  std::vector<int64_t> ChangeRounds() const {
    std::vector<int64_t> rounds;
    for (size_t r = 1; r < batches_[0].size(); ++r) {
      for (const std::vector<int64_t>& batches : batches_) {
        if (r < batches.size() && batches[r] != batches[r - 1]) {
          rounds.push_back(static_cast<int64_t>(r));
          break;
        }
      }
    }
    return rounds;
  }

  // Slowest over fastest worker's busy time in `round`.
  double Spread(int64_t round) const {
    double lo = std::numeric_limits<double>::infinity();
    double hi = 0;
    for (const std::vector<double>& times : busy_) {
      lo = std::min(lo, times[round]);
      hi = std::max(hi, times[round]);
    }
    return hi / lo;
  }
  // The largest and smallest Spread over rounds [from, to).
  double MaxSpread(int64_t from, int64_t to) const {
    double worst = 0;
    for (int64_t r = from; r < to; ++r) worst = std::max(worst, Spread(r));
    return worst;
  }
  double MinSpread(int64_t from, int64_t to) const {
    double best = std::numeric_limits<double>::infinity();
    for (int64_t r = from; r < to; ++r) best = std::min(best, Spread(r));
    return best;
  }

 private:
  struct Worker {
    int64_t batch = 0;  // of the step it computes
    double busy_s = 0;
    int64_t base_version = 0;
    int64_t clock = 0;
  };

  void StepEnded(WorkerId w) override {
    Worker& worker = workers_[w];
    const PushInfo push{worker.clock, worker.base_version, worker.batch,
                        true,         worker.batch,        worker.busy_s};
    busy_[w].push_back(worker.busy_s);
    batches_[w].push_back(worker.batch);
    ++worker.clock;
    const PushOutcome outcome = driver_->Push(w, push, 0);
    CHECK_FALSE(outcome.dropped);
    AfterEvent();
    Pull(w);
  }

  // A pull not answered waits (Hold) for the round: the driver and the
  // workers agree on who waits.
  void AfterEvent() override {
    for (WorkerId w = 0; w < policy_->num_workers(); ++w) {
      CHECK(waiting_[w] == driver_->pull_pending(w));
    }
    CheckBatches();
  }

  // The driver's sink.
  void Stage(const HandledPush<int>& /*push*/, double weight) override { staged_ += weight; }
  void Apply(double scale, bool with_optimizer, int64_t /*version*/) override {
    CHECK(with_optimizer);
    REQUIRE(staged_ > 0);
    CHECK(scale == doctest::Approx(1.0 / staged_));  // the mean over all samples
    CHECK(staged_ == doctest::Approx(static_cast<double>(expected_sum_)));
    staged_ = 0;
    ++applies_;
  }
  void SendModel(WorkerId w, const Reply& reply) override {
    Worker& worker = workers_[w];
    REQUIRE(waiting_[w]);
    // The batch size travels with the model, within [1, cap].
    CHECK(reply.batch >= 1);
    if (caps_[w] > 0) CHECK(reply.batch <= caps_[w]);
    waiting_[w] = false;
    worker.batch = reply.batch;
    worker.base_version = reply.version;
    worker.busy_s = step_time_(w, worker.batch, worker.clock);
    time_.Start(w, worker.busy_s);
  }

  // Sum b_i = B, each within [1, cap], after every action list.
  void CheckBatches() {
    int64_t sum = 0;
    for (WorkerId w = 0; w < policy_->num_workers(); ++w) {
      const int64_t b = policy_->batch(w);
      CHECK(b >= 1);
      if (caps_[w] > 0) CHECK(b <= caps_[w]);
      sum += b;
    }
    CHECK(sum == expected_sum_);
  }

  StepTime step_time_;
  std::vector<int64_t> caps_;
  int64_t expected_sum_ = 0;
  std::vector<Worker> workers_;
  std::vector<std::vector<double>> busy_;
  std::vector<std::vector<int64_t>> batches_;
  double staged_ = 0;
  int64_t applies_ = 0;
};

// --- Predictors -------------------------------------------------------------

TEST_CASE("predictors: last value and the EMA formula, both 0 before any observation") {
  predict::LastValuePredictor last;
  CHECK(last.Name() == "last");
  CHECK(last.Predict() == 0);
  last.Observe({3.0});
  last.Observe({5.0});
  CHECK(last.Predict() == 5.0);

  predict::EmaPredictor ema(0.25);
  CHECK(ema.Name() == "ema");
  CHECK(ema.Predict() == 0);
  ema.Observe({8.0});
  CHECK(ema.Predict() == 8.0);  // seeded by the first speed, not pulled toward 0
  ema.Observe({4.0});
  CHECK(ema.Predict() == doctest::Approx(0.25 * 4 + 0.75 * 8));
  ema.Observe({12.0});
  CHECK(ema.Predict() == doctest::Approx(0.25 * 12 + 0.75 * 7));

  predict::EmaPredictor memoryless(1.0);
  memoryless.Observe({2.0});
  memoryless.Observe({6.0});
  CHECK(memoryless.Predict() == 6.0);
}

TEST_CASE("predictors: MakePredictor builds the four, refuses the rest naming what it accepts") {
  Result<std::unique_ptr<predict::SpeedPredictor>> last = predict::MakePredictor("last", 0);
  REQUIRE(last.ok());
  CHECK((*last)->Name() == "last");
  Result<std::unique_ptr<predict::SpeedPredictor>> ema = predict::MakePredictor("ema", 0.5);
  REQUIRE(ema.ok());
  CHECK((*ema)->Name() == "ema");
  (*ema)->Observe({10.0});
  (*ema)->Observe({20.0});
  CHECK((*ema)->Predict() == doctest::Approx(15.0));  // alpha reached the predictor
  CHECK(predict::MakePredictor("ema", 1.0).ok());

  for (double alpha : {0.0, -0.5, 1.5, std::nan("")}) {
    Result<std::unique_ptr<predict::SpeedPredictor>> bad = predict::MakePredictor("ema", alpha);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().code() == StatusCode::kInvalidArgument);
    CHECK(bad.status().message().find("alpha") != std::string::npos);
  }
  for (const char* name : {"arima", "narx"}) {
    Result<std::unique_ptr<predict::SpeedPredictor>> made = predict::MakePredictor(name, 0.5);
    REQUIRE(made.ok());
    CHECK((*made)->Name() == name);
  }
  Result<std::unique_ptr<predict::SpeedPredictor>> unknown = predict::MakePredictor("lstm", 0.5);
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().code() == StatusCode::kInvalidArgument);
  CHECK(unknown.status().message().find("lstm") != std::string::npos);
  for (const char* name : {"last", "ema", "arima", "narx"}) {
    CHECK(unknown.status().message().find(name) != std::string::npos);
  }

  // MakePolicy passes the predictor's complaint on.
  PolicyConfig config = LbConfig(2, 8);
  config.predictor = "lstm";
  CHECK_FALSE(MakePolicy(config).ok());
  config.predictor = "arima";
  CHECK(MakePolicy(config).ok());
  config.arima_p = 9;
  CHECK_FALSE(MakePolicy(config).ok());
  config.arima_p = 8;  // the window grows to fit the order
  config.arima_q = 8;
  config.arima_d = 2;
  CHECK(MakePolicy(config).ok());
  config.predictor = "ema";
  config.ema_alpha = 0;
  CHECK_FALSE(MakePolicy(config).ok());
}

// --- LB-BSP -----------------------------------------------------------------

TEST_CASE("lbbsp: even initial batches sent before the model; one batch-weighted apply per round") {
  Result<std::unique_ptr<Policy>> made = MakePolicy(LbConfig(3, 10));
  REQUIRE(made.ok());
  auto* lb = dynamic_cast<LbBspPolicy*>(made->get());
  REQUIRE(lb != nullptr);
  CHECK(lb->Name() == "lbbsp");
  CHECK(lb->mode() == WorkerMode::kSync);
  CHECK(lb->global_batch() == 30);
  Actions a;
  for (WorkerId w = 0; w < 3; ++w) lb->WorkerJoined(w, &a);
  CHECK(a.empty());
  for (WorkerId w = 0; w < 3; ++w) {
    CHECK(lb->batch(w) == 10);
    lb->PullRequested(w, &a);
  }
  REQUIRE(a.size() == 6);
  for (WorkerId w = 0; w < 3; ++w) {
    CHECK(Is<SetBatch>(a[2 * w]));
    CHECK(WorkerOf(a[2 * w]) == w);
    CHECK(std::get<SetBatch>(a[2 * w]).samples == 10);
    CHECK(Is<ReplyModel>(a[2 * w + 1]));
    CHECK(WorkerOf(a[2 * w + 1]) == w);
  }

  // Batches of 12, 10 and 8 (as after a rebalance): the apply weighs each
  // mean gradient by its samples.
  a.clear();
  lb->PushArrived(0, {0, 0, 12, true, 12, 1.0}, &a);
  lb->PullRequested(0, &a);
  CHECK(Count<Hold>(a) == 1);                          // BSP: waits for the round
  lb->PushArrived(1, {0, 0, 10, false, 10, 1.0}, &a);  // refused payload: no weight
  lb->PushArrived(2, {0, 0, 8, true, 8, 1.0}, &a);
  CHECK(Count<Stage>(a) == 2);
  const Apply* apply = Find<Apply>(a);
  REQUIRE(apply != nullptr);
  CHECK(apply->scale == doctest::Approx(1.0 / 20));
  CHECK(lb->version() == 1);
  CHECK(lb->iteration() == 1);
  // The held worker is released with its batch first.
  REQUIRE(Find<SetBatch>(a, 0) != nullptr);
  REQUIRE(Find<ReplyModel>(a, 0) != nullptr);
  CHECK(IndexOf<SetBatch>(a, 0) < IndexOf<ReplyModel>(a, 0));
  CHECK(IndexOf<Apply>(a) < IndexOf<ReplyModel>(a, 0));

  // As BSP, a gradient computed on an older version is refused.
  const Drop drop = OnlyDrop(PushActions(lb, 1, {1, 0, 10, true, 10, 1.0}));
  CHECK(drop.reason.find("version 0") != std::string::npos);
}

// Closes one round in which worker w took busy[w] seconds for its batch
// (0: no timing reported).
void LbRound(LbBspPolicy* lb, const std::vector<double>& busy) {
  Actions a;
  for (WorkerId w = 0; w < lb->num_workers(); ++w) {
    const int64_t b = lb->batch(w);
    lb->PushArrived(w, {lb->clock(w), lb->version(), b, true, b, busy[w]}, &a);
  }
  CHECK(Count<Apply>(a) == 1);
}

TEST_CASE(
    "lbbsp cpu: largest-remainder rounding, caps cut off in proportion, unreported speeds kept") {
  PolicyConfig config = LbConfig(3, 10);
  config.rebalance_every = 1;
  config.predictor = "last";
  const struct {
    std::vector<int64_t> caps;
    std::vector<double> busy;
    std::vector<int64_t> batches;
  } cases[] = {
      // Speeds 1, 2 and 4 samples/s: shares 4.29, 8.57 and 17.14 of 30; the
      // sample the floors leave goes to the largest remainder, worker 1's.
      {{0, 0, 0}, {10.0, 5.0, 2.5}, {4, 9, 17}},
      // Worker 2 capped at 12: the other 18 split 1 : 2.
      {{0, 0, 12}, {10.0, 5.0, 2.5}, {6, 12, 12}},
      // Worker 2 reports no busy time: it keeps its 10; 0 and 1 split 20 by speed.
      {{0, 0, 0}, {10.0, 5.0, 0.0}, {7, 13, 10}},
      // A worker a thousand times slower still gets one sample a step.
      {{0, 0, 0}, {10.0, 0.01, 10000.0}, {1, 28, 1}},
  };
  for (size_t i = 0; i < std::size(cases); ++i) {
    CAPTURE(i);
    const auto& c = cases[i];
    LbBspPolicy lb(config);
    Actions a;
    for (WorkerId w = 0; w < 3; ++w) lb.WorkerJoined(w, WorkerInfo{c.caps[w]}, &a);
    LbRound(&lb, c.busy);
    for (WorkerId w = 0; w < 3; ++w) CHECK(lb.batch(w) == c.batches[w]);
  }
}

TEST_CASE("lbbsp cpu: a step's time is the server's reply-to-push time when that is longer") {
  // Both workers compute for 1 s; worker 1's pushes and models cross a slow
  // link, which its own clock does not see (a send returns once queued),
  // and reach the server 3 s after its reply. Speeds 10 and 10/3 samples/s:
  // 15 and 5 of 20.
  PolicyConfig config = LbConfig(2, 10);
  config.rebalance_every = 1;
  config.predictor = "last";
  LbBspPolicy lb(config);
  Actions a;
  for (WorkerId w = 0; w < 2; ++w) lb.WorkerJoined(w, &a);
  for (WorkerId w = 0; w < 2; ++w) {
    PushInfo push{lb.clock(w), lb.version(), 10, true, 10, 1.0};
    push.cycle_s = w == 1 ? 3.0 : 0.5;  // shorter than the busy time: ignored
    lb.PushArrived(w, push, &a);
  }
  CHECK(Count<Apply>(a) == 1);
  CHECK(lb.batch(0) == 15);
  CHECK(lb.batch(1) == 5);
}

TEST_CASE("lbbsp: MakePolicy refuses a bad mode, window or step") {
  PolicyConfig config = LbConfig(2, 8);
  config.lb_mode = "tpu";
  CHECK_FALSE(MakePolicy(config).ok());
  config = LbConfig(2, 8);
  config.rebalance_every = 0;
  CHECK_FALSE(MakePolicy(config).ok());
  config = LbConfig(2, 8);
  config.lb_step = -1;
  CHECK_FALSE(MakePolicy(config).ok());
}

TEST_CASE(
    "lbbsp cpu: under a steady 4x straggler the iteration times converge, with every predictor") {
  for (const std::string predictor : {"ema", "last", "arima", "narx"}) {
    CAPTURE(predictor);
    PolicyConfig config = LbConfig(4, 64);
    config.predictor = predictor;
    LbCluster driver(config, Linear(kOneSlow, 0.002));
    driver.Run(100);
    CHECK(driver.applies() == 100);
    CHECK(driver.MaxSpread(0, 5) > 3);  // before the first rebalance
    CHECK(driver.MaxSpread(20, 100) <= 1.15);
    // Batches follow speed: the straggler's is about a quarter of the others'.
    const int64_t slow = driver.policy().batch(3);
    const int64_t fast = driver.policy().batch(0);
    CHECK(slow * 3 <= fast);
    CHECK(slow * 5 >= fast);
  }
}

TEST_CASE("lbbsp cpu: without rebalancing the straggler keeps everyone waiting") {
  PolicyConfig config = LbConfig(4, 64);
  config.rebalance_every = 1000000;
  LbCluster driver(config, Linear(kOneSlow, 0.002));
  driver.Run(100);
  CHECK(driver.MinSpread(20, 100) > 3);
  for (WorkerId w = 0; w < 4; ++w) CHECK(driver.policy().batch(w) == 64);
}

TEST_CASE(
    "lbbsp cpu: batches re-adapt when another worker slows down mid-run, with every predictor") {
  // Worker 1 becomes 4x slower at iteration 150, as in the paper's experiment.
  StepTime step_time = [](WorkerId w, int64_t samples, int64_t step) {
    double per_sample = kOneSlow[w];
    if (w == 1 && step >= 150) per_sample *= 4;
    return 0.002 + static_cast<double>(samples) * per_sample;
  };
  for (const std::string predictor : {"ema", "last", "arima", "narx"}) {
    CAPTURE(predictor);
    PolicyConfig config = LbConfig(4, 64);
    config.predictor = predictor;
    LbCluster driver(config, step_time);
    driver.Run(300);
    CHECK(driver.MaxSpread(100, 150) <= 1.15);
    CHECK(driver.batch_in(1, 149) > 3 * driver.batch_in(3, 149));
    CHECK(driver.MaxSpread(150, 151) > 2);  // the change shows at once
    CHECK(driver.MaxSpread(175, 300) <= 1.15);
    // Now two stragglers of the same speed, with the same batch.
    CHECK(std::abs(driver.batch_in(1, 299) - driver.batch_in(3, 299)) <= 2);
    CHECK(driver.batch_in(0, 299) > 3 * driver.batch_in(1, 299));
  }
}

TEST_CASE("lbbsp: a cap on the fastest worker holds and the others take the rest") {
  // Worker 0 is twice as fast as 1 and 2: unbounded it would take 120 of 256.
  const std::vector<double> per_sample = {0.0005, 0.001, 0.001, 0.004};
  LbCluster driver(LbConfig(4, 64), Linear(per_sample), {80, 0, 0, 0});
  driver.Run(60);
  CHECK(driver.policy().batch(0) == 80);
  // The 176 left go to the others by speed: 4 : 4 : 1.
  CHECK(std::abs(driver.policy().batch(1) - 78) <= 1);
  CHECK(std::abs(driver.policy().batch(2) - 78) <= 1);
  CHECK(std::abs(driver.policy().batch(3) - 20) <= 1);
  CHECK(driver.MaxSpread(20, 60) <= 1.15 * 2);  // the cap keeps worker 0 at half time
}

TEST_CASE(
    "lbbsp: caps apply from the join on; when they hold less than B, every worker runs at its "
    "cap") {
  {
    // A cap below the even share: the excess goes to the others at once.
    LbCluster driver(LbConfig(4, 64), Linear(kOneSlow), {10, 0, 0, 0});
    CHECK(driver.policy().batch(0) == 10);
    CHECK(driver.policy().batch(1) + driver.policy().batch(2) + driver.policy().batch(3) == 246);
    driver.Run(30);
    CHECK(driver.policy().batch(0) == 10);
  }
  {
    // A cap on the slow worker that balancing would never reach is harmless.
    LbCluster driver(LbConfig(4, 64), Linear(kOneSlow), {0, 0, 0, 64});
    driver.Run(30);
    CHECK(driver.MaxSpread(20, 30) <= 1.15);
  }
  {
    // All capped, sum of caps 90 < B = 256: the sum is the caps' (documented).
    LbCluster driver(LbConfig(4, 64), Linear(kOneSlow), {20, 20, 20, 30});
    for (WorkerId w = 0; w < 4; ++w) CHECK(driver.policy().batch(w) == (w == 3 ? 30 : 20));
    driver.Run(30);
    for (WorkerId w = 0; w < 4; ++w) CHECK(driver.policy().batch(w) == (w == 3 ? 30 : 20));
  }
}

TEST_CASE("lbbsp gpu: non-linear step times converge by fast approach, then fine-tuning") {
  // Below 70 samples the fast GPUs are not saturated and a step costs 70 ms
  // whatever its batch, so a speed measured at one batch says little about
  // another; the balanced batches (about 79 and 20) are past that.
  PolicyConfig config = LbConfig(4, 64, "gpu");
  LbCluster driver(config, Saturating(kOneSlow, 0.070));
  CHECK(driver.policy().step() == 256 / 16);  // B / (4N)
  CHECK_FALSE(driver.policy().fine_tuning());
  driver.Run(10);
  CHECK_FALSE(driver.policy().fine_tuning());
  CHECK(driver.policy().batch(3) == 64 - 2 * 16);  // two full steps taken from the straggler
  // The first overshoot starts fine-tuning with half the step.
  int64_t rounds = 10;
  while (!driver.policy().fine_tuning() && rounds < 100) driver.Run(rounds += 5);
  CHECK(driver.policy().fine_tuning());
  CHECK(rounds <= 50);
  CHECK(driver.policy().step() == 8);
  driver.Run(400);
  CHECK(driver.policy().fine_tuning());
  CHECK(driver.policy().step() < 8);
  // Each overshoot also widens the window: moves come every 5 rounds at
  // first, far less often once fine-tuned.
  const std::vector<int64_t> changes = driver.ChangeRounds();
  REQUIRE(changes.size() >= 3);
  CHECK(changes[0] == 5);
  CHECK(changes[1] - changes[0] == 5);
  CHECK(changes.back() - changes[changes.size() - 2] >= 20);
  CHECK(driver.MaxSpread(80, 400) <= 1.15);
  CHECK(driver.MaxSpread(0, 5) > 2.5);

  // Without moves the spread stays.
  config.rebalance_every = 1000000;
  LbCluster still(config, Saturating(kOneSlow, 0.070));
  still.Run(50);
  CHECK(still.MinSpread(0, 50) > 2.5);
  CHECK_FALSE(still.policy().fine_tuning());
}

TEST_CASE("lbbsp gpu: a lasting change after fine-tuning starts the fast approach over") {
  // Worker 0 is 2x slow from the start; at step 150 worker 3's link drops,
  // adding 8 ms to each of its steps, as in the paper's bandwidth experiment.
  StepTime step_time = [](WorkerId w, int64_t samples, int64_t step) {
    const double per_sample = w == 0 ? 2e-4 : 1e-4;
    return 0.002 + static_cast<double>(samples) * per_sample + (w == 3 && step >= 150 ? 0.008 : 0);
  };
  PolicyConfig config = LbConfig(4, 64, "gpu");
  LbCluster driver(config, step_time);
  driver.Run(150);
  REQUIRE(driver.policy().fine_tuning());
  CHECK(driver.MaxSpread(100, 150) <= 1.15);
  const int64_t tuned_step = driver.policy().step();
  CHECK(tuned_step < 16);
  // Within a few of the first windows the fast approach is back, with its
  // full step, and moves worker 3's samples away at its pace.
  driver.Run(200);
  CHECK(driver.MaxSpread(150, 151) > 1.5);  // the change shows at once
  CHECK(driver.policy().batch(3) < 40);
  driver.Run(500);
  // Balanced again: worker 3 at about 16 samples, the spread as before.
  CHECK(driver.MaxSpread(400, 500) <= 1.15);
  CHECK(std::abs(driver.batch_in(3, 499) - 16) <= 4);
}

TEST_CASE("lbbsp gpu: the leader is below its cap, and the first step follows --lb-step") {
  PolicyConfig config = LbConfig(4, 64, "gpu");
  config.lb_step = 8;
  // Worker 0, the fastest, may not grow: worker 1 leads.
  const std::vector<double> per_sample = {0.0005, 0.001, 0.001, 0.004};
  LbCluster driver(config, Saturating(per_sample, 0.001), {64, 0, 0, 0});
  CHECK(driver.policy().step() == 8);
  driver.Run(5);
  CHECK(driver.policy().batch(0) == 64);
  CHECK(driver.policy().batch(1) == 72);
  CHECK(driver.policy().batch(3) == 56);
  driver.Run(300);
  CHECK(driver.policy().batch(0) == 64);
}

}  // namespace
}  // namespace dmlps::sync::testing
