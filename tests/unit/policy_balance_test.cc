// LB-BSP, token scheduling and the speed predictors behind LB-BSP: scripted
// event sequences, and a discrete-event driver in virtual time that plays the
// worker side of each mode, so that the invariants docs/algorithms.md states
// ("LB-BSP", "Token scheduling") are checked on the schedules a slow worker
// actually produces.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dmlps/predict/predictor.h"
#include "dmlps/sync/driver.h"
#include "dmlps/sync/lbbsp.h"
#include "dmlps/sync/policy.h"
#include "policy_test_util.h"
#include "dmlps/sync/token.h"

namespace dmlps::sync {
namespace {


using testing::Count;
using testing::CountFor;
using testing::Find;
using testing::IndexOf;
using testing::Is;
using testing::WorkerOf;

// Seconds worker w takes for `samples` samples in its step number `step`.
using StepTime = std::function<double(WorkerId w, int64_t samples, int64_t step)>;

// CPU-like: time linear in the batch, plus a small fixed cost per step.
StepTime Linear(std::vector<double> per_sample, double overhead = 0) {
  return [=](WorkerId w, int64_t samples, int64_t) {
    return overhead + static_cast<double>(samples) * per_sample[w];
  };
}

// GPU-like: below the batch that saturates the device a step costs the same
// (launch overhead, idle cores); above it, time grows with the batch.
StepTime Saturating(std::vector<double> per_sample, double floor_s) {
  return [=](WorkerId w, int64_t samples, int64_t) {
    return std::max(floor_s, static_cast<double>(samples) * per_sample[w]);
  };
}

// A push due at `time`; ties go in the order they were scheduled.
struct Event {
  double time;
  int64_t seq;
  WorkerId worker;
  bool operator>(const Event& other) const {
    return time != other.time ? time > other.time : seq > other.seq;
  }
};
using EventQueue = std::priority_queue<Event, std::vector<Event>, std::greater<Event>>;

PolicyConfig LbConfig(int64_t n, int64_t batch, const std::string& mode = "cpu") {
  PolicyConfig config;
  config.name = "lbbsp";
  config.num_workers = n;
  config.batch = batch;
  config.lb_mode = mode;
  return config;
}

// Plays the workers of an LB-BSP run through a policy driver: pull, take the
// batch size sent with the model, compute it for step_time seconds of virtual
// time, push with that busy time, pull again. Checks every effect as it goes.
class LbCluster : private DriverSink<int> {
 public:
  LbCluster(const PolicyConfig& config, StepTime step_time, std::vector<int64_t> caps = {})
      : step_time_(std::move(step_time)), caps_(std::move(caps)) {
    Result<std::unique_ptr<Policy>> made = MakePolicy(config);
    REQUIRE(made.ok());
    driver_.emplace(std::move(made).value(), DriverOptions{},
                    static_cast<DriverSink<int>&>(*this));
    policy_ = dynamic_cast<const LbBspPolicy*>(&driver_->policy());
    REQUIRE(policy_ != nullptr);
    const int64_t n = config.num_workers;
    caps_.resize(n, 0);
    workers_.resize(n);
    busy_.resize(n);
    batches_.resize(n);
    expected_sum_ = config.batch * n;
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

  // Runs until `iterations` rounds have completed in all.
  void Run(int64_t iterations) {
    if (!started_) {
      started_ = true;
      for (WorkerId w = 0; w < policy_->num_workers(); ++w) Pull(w);
    }
    while (policy_->iteration() < iterations) {
      REQUIRE_FALSE(queue_.empty());  // every worker waiting: a deadlock
      const Event event = queue_.top();
      queue_.pop();
      now_ = event.time;
      const WorkerId w = event.worker;
      Worker& worker = workers_[w];
      const PushInfo push{worker.clock, worker.base_version, worker.batch, true, worker.batch,
                          worker.busy_s};
      busy_[w].push_back(worker.busy_s);
      batches_[w].push_back(worker.batch);
      ++worker.clock;
      const PushOutcome outcome = driver_->Push(w, push, 0);
      CHECK_FALSE(outcome.dropped);
      AfterEvent();
      Pull(w);
    }
  }

  const LbBspPolicy& policy() const { return *policy_; }
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
    bool waiting = false;     // pulled, not yet answered
    int64_t batch = 0;        // of the step it computes
    double busy_s = 0;
    int64_t base_version = 0;
    int64_t clock = 0;
  };

  void Pull(WorkerId w) {
    workers_[w].waiting = true;
    driver_->Pull(w);
    AfterEvent();
  }

  // A pull not answered waits (Hold) for the round: the driver and the
  // workers agree on who waits.
  void AfterEvent() {
    for (WorkerId w = 0; w < policy_->num_workers(); ++w) {
      CHECK(workers_[w].waiting == driver_->pull_pending(w));
    }
    CheckBatches();
  }

  // The driver's sink.
  void Stage(const HandledPush<int>& /*push*/, double weight) override { staged_ += weight; }
  void Apply(double scale, bool with_optimizer) override {
    CHECK(with_optimizer);
    REQUIRE(staged_ > 0);
    CHECK(scale == doctest::Approx(1.0 / staged_));  // the mean over all samples
    CHECK(staged_ == doctest::Approx(static_cast<double>(expected_sum_)));
    staged_ = 0;
    ++applies_;
  }
  void SendModel(WorkerId w, const Reply& reply) override {
    Worker& worker = workers_[w];
    REQUIRE(worker.waiting);
    // The batch size travels with the model, within [1, cap].
    CHECK(reply.batch >= 1);
    if (caps_[w] > 0) CHECK(reply.batch <= caps_[w]);
    worker.waiting = false;
    worker.batch = reply.batch;
    worker.base_version = reply.version;
    worker.busy_s = step_time_(w, worker.batch, worker.clock);
    queue_.push({now_ + worker.busy_s, seq_++, w});
  }
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

  std::optional<PolicyDriver<int>> driver_;
  const LbBspPolicy* policy_ = nullptr;  // the driver's
  StepTime step_time_;
  std::vector<int64_t> caps_;
  int64_t expected_sum_ = 0;
  std::vector<Worker> workers_;
  std::vector<std::vector<double>> busy_;
  std::vector<std::vector<int64_t>> batches_;
  EventQueue queue_;
  double now_ = 0;
  int64_t seq_ = 0;
  double staged_ = 0;
  int64_t applies_ = 0;
  bool started_ = false;
};

// Seconds per sample: three workers at 1 ms, worker 3 four times slower.
const std::vector<double> kOneSlow = {0.001, 0.001, 0.001, 0.004};

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
  CHECK(Count<Hold>(a) == 1);  // BSP: waits for the round
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
  a.clear();
  lb->PushArrived(1, {1, 0, 10, true, 10, 1.0}, &a);
  REQUIRE(a.size() == 1);
  CHECK(Is<Drop>(a[0]));
  CHECK(std::get<Drop>(a[0]).reason.find("version 0") != std::string::npos);
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

TEST_CASE("lbbsp cpu: largest-remainder rounding, caps cut off in proportion, unreported speeds kept") {
  PolicyConfig config = LbConfig(3, 10);
  config.rebalance_every = 1;
  config.predictor = "last";
  {
    // Speeds 1, 2 and 4 samples/s: shares 4.29, 8.57 and 17.14 of 30; the
    // sample the floors leave goes to the largest remainder, worker 1's.
    LbBspPolicy lb(config);
    Actions a;
    for (WorkerId w = 0; w < 3; ++w) lb.WorkerJoined(w, &a);
    LbRound(&lb, {10.0, 5.0, 2.5});
    CHECK(lb.batch(0) == 4);
    CHECK(lb.batch(1) == 9);
    CHECK(lb.batch(2) == 17);
  }
  {
    // Worker 2 capped at 12: the other 18 split 1 : 2.
    LbBspPolicy lb(config);
    Actions a;
    lb.WorkerJoined(0, &a);
    lb.WorkerJoined(1, &a);
    lb.WorkerJoined(2, WorkerInfo{12}, &a);
    LbRound(&lb, {10.0, 5.0, 2.5});
    CHECK(lb.batch(0) == 6);
    CHECK(lb.batch(1) == 12);
    CHECK(lb.batch(2) == 12);
  }
  {
    // Worker 2 reports no busy time: it keeps its 10; 0 and 1 split 20 by speed.
    LbBspPolicy lb(config);
    Actions a;
    for (WorkerId w = 0; w < 3; ++w) lb.WorkerJoined(w, &a);
    LbRound(&lb, {10.0, 5.0, 0.0});
    CHECK(lb.batch(0) == 7);
    CHECK(lb.batch(1) == 13);
    CHECK(lb.batch(2) == 10);
  }
  {
    // A worker a thousand times slower still gets one sample a step.
    LbBspPolicy lb(config);
    Actions a;
    for (WorkerId w = 0; w < 3; ++w) lb.WorkerJoined(w, &a);
    LbRound(&lb, {10.0, 0.01, 10000.0});
    CHECK(lb.batch(0) == 1);
    CHECK(lb.batch(1) == 28);
    CHECK(lb.batch(2) == 1);
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

TEST_CASE("lbbsp cpu: under a steady 4x straggler the iteration times converge, with every predictor") {
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

TEST_CASE("lbbsp cpu: batches re-adapt when another worker slows down mid-run, with every predictor") {
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

TEST_CASE("lbbsp: caps apply from the join on; when they hold less than B, every worker runs at its cap") {
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

// --- Token scheduling -------------------------------------------------------

// Plays the workers of a token run through a policy driver: each trains the
// token it was granted for step_time(w, samples) and pushes; its next token
// comes with a go-ahead (within an iteration) or the model (a new one); until
// then it waits.
class TokenCluster : private DriverSink<int> {
 public:
  TokenCluster(int64_t n, int64_t batch, int64_t token_size, StepTime step_time)
      : step_time_(std::move(step_time)),
        global_batch_(batch * n),
        token_size_(token_size),
        workers_(n),
        replies_in_iteration_(n, 0) {
    PolicyConfig config;
    config.name = "token";
    config.num_workers = n;
    config.batch = batch;
    config.token_size = token_size;
    Result<std::unique_ptr<Policy>> made = MakePolicy(config);
    REQUIRE(made.ok());
    driver_.emplace(std::move(made).value(), DriverOptions{},
                    static_cast<DriverSink<int>&>(*this));
    policy_ = dynamic_cast<const TokenPolicy*>(&driver_->policy());
    REQUIRE(policy_ != nullptr);
    CHECK(policy_->mode() == WorkerMode::kToken);
    for (WorkerId w = 0; w < n; ++w) driver_->Attach(w, {});
    driver_->Start();
  }

  void Run(int64_t iterations) {
    if (!started_) {
      started_ = true;
      for (WorkerId w = 0; w < policy_->num_workers(); ++w) {
        workers_[w].waiting = true;
        driver_->Pull(w);
        CheckWaiting();
      }
    }
    while (policy_->iteration() < iterations) {
      REQUIRE_FALSE(queue_.empty());
      const Event event = queue_.top();
      queue_.pop();
      now_ = event.time;
      const WorkerId w = event.worker;
      Worker& worker = workers_[w];
      REQUIRE(worker.token >= 0);
      CHECK(granted_.count(worker.token) == 1);
      CHECK(completed_.insert(worker.token).second);  // each token done once
      const int64_t samples = SamplesOf(worker.token);
      const PushInfo push{worker.clock++, worker.base_version, samples, true, samples,
                          worker.busy_s};
      worker.token = -1;
      worker.waiting = true;
      CHECK_FALSE(driver_->Push(w, push, 0).dropped);
      CheckWaiting();
    }
  }

  const TokenPolicy& policy() const { return *policy_; }
  int64_t applies() const { return applies_; }
  double now() const { return now_; }

 private:
  struct Worker {
    bool waiting = false;  // pulled or pushed, not yet answered
    int64_t token = -1;    // granted, not yet pushed
    int64_t base_version = 0;
    int64_t clock = 0;
    double busy_s = 0;
  };

  int64_t SamplesOf(int64_t token) const {
    return std::min(token_size_, global_batch_ - token * token_size_);
  }

  void Start(WorkerId w) {
    Worker& worker = workers_[w];
    REQUIRE(worker.waiting);
    REQUIRE(worker.token >= 0);  // the Grant came first
    worker.waiting = false;
    worker.busy_s = step_time_(w, SamplesOf(worker.token), worker.clock);
    queue_.push({now_ + worker.busy_s, seq_++, w});
  }

  // A worker waiting for its answer (held) has no token.
  void CheckWaiting() {
    for (const Worker& worker : workers_) {
      if (worker.waiting) CHECK(worker.token < 0);
    }
  }

  // The token a reply carries.
  void TakeToken(WorkerId w, int64_t token) {
    CHECK(workers_[w].token < 0);
    CHECK(token >= 0);
    CHECK(token < policy_->tokens_per_iteration());
    CHECK(granted_.insert(token).second);  // never granted twice in an iteration
    workers_[w].token = token;
  }

  // The driver's sink.
  void Stage(const HandledPush<int>& /*push*/, double weight) override { staged_ += weight; }
  void Apply(double scale, bool with_optimizer) override {
    CHECK(with_optimizer);
    CHECK(scale == doctest::Approx(1.0 / staged_));
    CHECK(staged_ == doctest::Approx(static_cast<double>(global_batch_)));
    CHECK(static_cast<int64_t>(completed_.size()) == policy_->tokens_per_iteration());
    CHECK(granted_.size() == completed_.size());
    staged_ = 0;
    granted_.clear();
    completed_.clear();
    std::fill(replies_in_iteration_.begin(), replies_in_iteration_.end(), 0);
    ++applies_;
  }
  void SendModel(WorkerId w, const Reply& reply) override {
    TakeToken(w, reply.token);
    ++replies_in_iteration_[w];
    CHECK(replies_in_iteration_[w] == 1);  // one new model per iteration
    workers_[w].base_version = reply.version;
    Start(w);
  }
  void SendContinue(WorkerId w, bool download, const Reply& reply) override {
    TakeToken(w, reply.token);
    CHECK_FALSE(download);
    CHECK(workers_[w].base_version == policy_->version());
    Start(w);
  }
  void SendSyncNow(WorkerId w, int64_t /*round*/) override {
    FAIL("unexpected SyncNow for worker " << w);
  }
  void Dropped(WorkerId w, const Drop& drop) override {
    FAIL("unexpected drop for worker " << w << ": " << drop.reason);
  }
  void Evaluate(bool /*must*/) override {}

  std::optional<PolicyDriver<int>> driver_;
  const TokenPolicy* policy_ = nullptr;  // the driver's
  StepTime step_time_;
  int64_t global_batch_;
  int64_t token_size_;
  std::vector<Worker> workers_;
  std::vector<int64_t> replies_in_iteration_;
  std::set<int64_t> granted_;
  std::set<int64_t> completed_;
  EventQueue queue_;
  double now_ = 0;
  int64_t seq_ = 0;
  double staged_ = 0;
  int64_t applies_ = 0;
  bool started_ = false;
};

// Pushes worker w's token (the one it holds) and returns the actions.
Actions PushToken(Policy* policy, WorkerId w, int64_t samples = 16) {
  Actions a;
  policy->PushArrived(w, {policy->clock(w), policy->version(), samples, true, samples, 1.0}, &a);
  return a;
}

// The token granted in `a`, or -1.
int64_t GrantedToken(const Actions& a, WorkerId w) {
  const Grant* grant = Find<Grant>(a, w);
  return grant == nullptr ? -1 : grant->token;
}

TEST_CASE("token: tokens dealt evenly; a pull gets a token and the model; MakePolicy checks the size") {
  TokenPolicy token(3, 10, 4);  // B = 30: 8 tokens, 3 + 3 + 2
  CHECK(token.Name() == "token");
  CHECK(token.tokens_per_iteration() == 8);
  Actions a;
  for (WorkerId w = 0; w < 3; ++w) token.WorkerJoined(w, &a);
  for (WorkerId w = 0; w < 3; ++w) token.PullRequested(w, &a);
  REQUIRE(a.size() == 6);
  for (WorkerId w = 0; w < 3; ++w) {
    CHECK(Is<Grant>(a[2 * w]));  // the token travels with the model
    CHECK(Is<ReplyModel>(a[2 * w + 1]));
  }
  CHECK(GrantedToken(a, 0) == 0);
  CHECK(GrantedToken(a, 1) == 3);
  CHECK(GrantedToken(a, 2) == 6);

  PolicyConfig config;
  config.name = "token";
  config.num_workers = 2;
  config.batch = 8;
  config.token_size = 0;
  CHECK_FALSE(MakePolicy(config).ok());
  config.token_size = 17;
  CHECK_FALSE(MakePolicy(config).ok());
  config.token_size = 16;
  CHECK(MakePolicy(config).ok());
}

TEST_CASE("token: helpers go to the straggler with the fewest helpers, then the least progress") {
  // B = 192 in 12 tokens: worker 0 has 0-2, 1 has 3-5, 2 has 6-8, 3 has 9-11.
  TokenPolicy token(4, 48, 16);
  Actions a;
  for (WorkerId w = 0; w < 4; ++w) token.WorkerJoined(w, &a);
  for (WorkerId w = 0; w < 4; ++w) token.PullRequested(w, &a);

  a = PushToken(&token, 1);  // worker 1 has made progress
  CHECK(GrantedToken(a, 1) == 4);
  CHECK(Find<Continue>(a, 1) != nullptr);
  CHECK(GrantedToken(PushToken(&token, 0), 0) == 1);
  CHECK(GrantedToken(PushToken(&token, 0), 0) == 2);
  // Own bucket empty; nobody has helpers; 2 and 3 have done nothing of their
  // own, 1 has: worker 2 (the lower rank of the two), from its far end.
  a = PushToken(&token, 0);
  CHECK(GrantedToken(a, 0) == 8);
  CHECK(Find<Continue>(a, 0) != nullptr);

  CHECK(GrantedToken(PushToken(&token, 3), 3) == 10);
  CHECK(GrantedToken(PushToken(&token, 3), 3) == 11);
  // Worker 2 is slower than 1 but has a helper already: worker 1 gets this one.
  CHECK(GrantedToken(PushToken(&token, 3), 3) == 5);
  // 1's bucket is empty now; worker 0 goes on helping 2.
  CHECK(GrantedToken(PushToken(&token, 0), 0) == 7);

  // Nothing left to grant: each is held, until the last token is in.
  for (WorkerId w : {1, 2, 3}) {
    a = PushToken(&token, w);
    REQUIRE(a.size() == 2);
    CHECK(Is<Stage>(a[0]));
    CHECK(Is<Hold>(a[1]));
  }
  a = PushToken(&token, 0);
  CHECK(Count<Stage>(a) == 1);
  const Apply* apply = Find<Apply>(a);
  REQUIRE(apply != nullptr);
  CHECK(apply->scale == doctest::Approx(1.0 / 192));
  CHECK(token.iteration() == 1);
  // Everyone starts the next iteration on its own first token.
  for (WorkerId w = 0; w < 4; ++w) {
    CHECK(CountFor<ReplyModel>(a, w) == 1);
    CHECK(GrantedToken(a, w) == 3 * w);
  }
  CHECK(token.completed(0) == 5);
  CHECK(token.completed(2) == 1);
  CHECK(token.completed(1) == 2);
  CHECK(token.completed(3) == 4);
}

TEST_CASE("token: a helper that comes back to a straggler is one helper, not two") {
  // B = 256 in 16 tokens: worker w has 4w to 4w + 3.
  TokenPolicy token(4, 64, 16);
  Actions a;
  for (WorkerId w = 0; w < 4; ++w) token.WorkerJoined(w, &a);
  for (WorkerId w = 0; w < 4; ++w) token.PullRequested(w, &a);
  CHECK(GrantedToken(PushToken(&token, 2), 2) == 9);
  CHECK(GrantedToken(PushToken(&token, 3), 3) == 13);
  for (int64_t next : {1, 2, 3}) CHECK(GrantedToken(PushToken(&token, 0), 0) == next);
  // Worker 0 helps each straggler once: 1 (no progress), then 2 and 3 (no
  // helpers yet), then 1 again (all have one helper; 1 the least progress).
  for (int64_t next : {7, 11, 15, 6}) CHECK(GrantedToken(PushToken(&token, 0), 0) == next);
  // Worker 1 still has one helper, so it stays the choice.
  CHECK(GrantedToken(PushToken(&token, 0), 0) == 5);
}

TEST_CASE("token: a worker with nothing to do is held and answered once when the iteration ends") {
  TokenPolicy token(2, 16, 16);  // one token each
  Actions a;
  token.WorkerJoined(0, &a);
  token.WorkerJoined(1, &a);
  token.PullRequested(0, &a);
  token.PullRequested(1, &a);
  a = PushToken(&token, 0);
  REQUIRE(a.size() == 2);
  CHECK(Is<Hold>(a[1]));
  CHECK(WorkerOf(a[1]) == 0);
  // A held worker that asks again (say, after a reconnect) is held too ...
  a.clear();
  token.PullRequested(0, &a);
  REQUIRE(a.size() == 1);
  CHECK(Is<Hold>(a[0]));
  // ... and still gets one answer, with one token.
  a = PushToken(&token, 1);
  CHECK(Count<Apply>(a) == 1);
  CHECK(CountFor<ReplyModel>(a, 0) == 1);
  CHECK(CountFor<Grant>(a, 0) == 1);
  CHECK(CountFor<ReplyModel>(a, 1) == 1);
  CHECK(CountFor<Grant>(a, 1) == 1);
  CHECK(IndexOf<Grant>(a, 0) < IndexOf<ReplyModel>(a, 0));
  CHECK(IndexOf<Apply>(a) < IndexOf<Grant>(a, 0));  // the model sent is the new one

  // A push with no token in flight is a protocol error, not a completion.
  a = PushToken(&token, 0);  // completes its token and waits
  CHECK(CountFor<Hold>(a, 0) == 1);
  a.clear();
  token.PushArrived(0, {token.clock(0), token.version(), 16, true, 16, 1.0}, &a);
  REQUIRE(a.size() == 1);
  CHECK(Is<Drop>(a[0]));
  CHECK(std::get<Drop>(a[0]).reason.find("token") != std::string::npos);
}

TEST_CASE("token: with fewer tokens than workers, a pull waits and the iteration ends once") {
  TokenPolicy token(3, 1, 2);  // B = 3 in 2 tokens: worker 2's bucket is empty
  CHECK(token.tokens_per_iteration() == 2);
  Actions a;
  for (WorkerId w = 0; w < 3; ++w) token.WorkerJoined(w, &a);
  for (WorkerId w = 0; w < 3; ++w) token.PullRequested(w, &a);
  CHECK(GrantedToken(a, 0) == 0);
  CHECK(GrantedToken(a, 1) == 1);
  CHECK(CountFor<Hold>(a, 2) == 1);
  a = PushToken(&token, 0, 2);
  CHECK(CountFor<Hold>(a, 0) == 1);
  a = PushToken(&token, 1, 1);  // the short last token
  const Apply* apply = Find<Apply>(a);
  REQUIRE(apply != nullptr);
  CHECK(apply->scale == doctest::Approx(1.0 / 3));
  // Two tokens for three waiting workers: two answered, once each, the held
  // pull first; worker 2 helps 0, and 0 helps 1.
  CHECK(Count<ReplyModel>(a) == 2);
  CHECK(Count<Grant>(a) == 2);
  CHECK(GrantedToken(a, 2) == 0);
  CHECK(GrantedToken(a, 0) == 1);
  CHECK(CountFor<ReplyModel>(a, 1) == 0);
  // Worker 1 waits out this iteration and starts the next.
  a = PushToken(&token, 2, 2);
  CHECK(CountFor<Hold>(a, 2) == 1);
  a = PushToken(&token, 0, 1);
  CHECK(Count<Apply>(a) == 1);
  CHECK(CountFor<ReplyModel>(a, 1) == 1);
  CHECK(CountFor<ReplyModel>(a, 0) == 1);
  CHECK(CountFor<ReplyModel>(a, 2) == 0);
}

TEST_CASE("token driver: a 4x faster worker trains about 4x the tokens; every token once per iteration") {
  TokenCluster driver(4, 64, 4, Linear(kOneSlow, 0.0002));
  driver.Run(200);
  CHECK(driver.applies() == 200);
  const TokenPolicy& token = driver.policy();
  CHECK(token.tokens_per_iteration() == 64);
  int64_t total = 0;
  for (WorkerId w = 0; w < 4; ++w) total += token.completed(w);
  CHECK(total == 200 * 64);
  for (WorkerId fast = 0; fast < 3; ++fast) {
    const double ratio =
        static_cast<double>(token.completed(fast)) / static_cast<double>(token.completed(3));
    CAPTURE(ratio);
    CHECK(ratio >= 3);
    CHECK(ratio <= 5);
  }
  // Nobody waits out the straggler: an iteration takes about B / (total
  // speed) = 256 samples / 3250 samples/s, not the 256 ms BSP would take.
  CHECK(driver.now() / 200 < 0.120);
}

TEST_CASE("token driver: equal workers share the tokens equally") {
  TokenCluster driver(3, 32, 8, Linear({0.001, 0.001, 0.001}));
  driver.Run(50);
  CHECK(driver.applies() == 50);
  for (WorkerId w = 0; w < 3; ++w) CHECK(driver.policy().completed(w) == 50 * 4);
}

}  // namespace
}  // namespace dmlps::sync
