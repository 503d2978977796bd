// The policy driver against the sink that records what it is asked to do:
// replies held while training holds, clock offsets of late joiners, drops,
// evaluations and the iteration limit.
#include "dmlps/sync/driver.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "dmlps/sync/summary.h"
#include "driver_test_util.h"

namespace doctest {
// Effect lists print one effect a line when a check fails.
template <>
struct StringMaker<std::vector<std::string>> {
  static String convert(const std::vector<std::string>& lines) {
    std::string text = "{";
    for (const std::string& line : lines) text += "\n  " + line;
    return (text + " }").c_str();
  }
};
}  // namespace doctest

namespace dmlps::sync {
namespace {

using Lines = std::vector<std::string>;

// A driver of `config`'s policy with workers 0..n-1 attached and started,
// each having pulled once.
struct Scripted : testing::DrivenPolicy {
  explicit Scripted(const PolicyConfig& config, const DriverOptions& options = {})
      : DrivenPolicy(config, options) {
    for (WorkerId w = 0; w < config.job.workers; ++w) driver.Pull(w);
    driver.Start();
  }

  // Worker w's push of `samples` on the model version it has, in its own
  // clock; then the driver advances.
  PushOutcome Push(WorkerId w, int64_t clock, int64_t samples, int payload = 0,
                   int64_t base_version = -1) {
    PushInfo info;
    info.clock = clock;
    info.base_version = base_version >= 0 ? base_version : driver.policy().version();
    info.samples = samples;
    return DrivenPolicy::Push(w, info, payload);
  }

  // The effects since the last call, a line each.
  Lines Take() { return testing::Describe(DrivenPolicy::Take()); }
};

PolicyConfig Config(const std::string& name, int64_t n) {
  return {.name = name, .job = {.workers = n}};
}

TEST_CASE("driver: Start joins every attached worker, answers the pulls and evaluates") {
  Scripted s(Config("bsp", 2));
  CHECK(s.driver.started());
  CHECK(s.driver.live_workers() == 2);
  CHECK(s.Take() == Lines{"model 0 v0 b0 t-1", "model 1 v0 b0 t-1", "eval must"});
  CHECK_FALSE(s.driver.pull_pending(0));
}

TEST_CASE("driver: a push is staged with its payload and the worker's own clock") {
  Scripted s(Config("bsp", 2));
  s.Take();
  PushOutcome first = s.Push(0, 0, 10, /*payload=*/7);
  CHECK(first.staged);
  CHECK_FALSE(first.dropped);
  CHECK(first.samples == 10);
  s.driver.Pull(0);
  CHECK(s.driver.pull_pending(0));  // held until the round closes
  s.Push(1, 0, 30, 8);
  s.driver.Pull(1);
  CHECK(s.Take() == Lines{"stage 0 c0 p7 x10", "stage 1 c0 p8 x30", "apply 0.025 v1",
                          "model 0 v1 b0 t-1", "model 1 v1 b0 t-1"});
  CHECK(s.driver.samples_applied() == 40);
  CHECK(s.sink.advanced() == 1);
}

TEST_CASE("driver: drops count as wasted samples and reach the sink, late or not") {
  Scripted s(Config("backup", 3));  // backup 1: two pushes close a round
  s.Take();
  s.Push(0, 0, 10);
  s.Push(1, 0, 20);
  const PushOutcome late = s.Push(2, 0, 30, 0, /*base_version=*/0);
  CHECK(late.dropped);
  CHECK_FALSE(late.staged);
  CHECK(late.samples == 0);
  // A push for a clock the worker is not at is the worker's error.
  const PushOutcome wrong = s.Push(2, 5, 40);
  CHECK(wrong.dropped);
  const Lines lines = s.Take();
  CHECK(lines.at(lines.size() - 2) == "drop 2 late");
  CHECK(lines.back() == "drop 2 error");
  CHECK(s.driver.dropped_pushes() == 2);
  CHECK(s.driver.wasted_samples() == 70);
  CHECK(s.driver.samples_applied() == 30);
}

TEST_CASE("driver: evaluations every eval_every iterations, then the limit once") {
  Scripted s(Config("asp", 1), DriverOptions{.eval_every = 3, .max_iterations = 7});
  CHECK(s.Take() == Lines{"model 0 v0 b0 t-1", "eval must"});
  Lines evals;
  for (int64_t c = 0; c < 9; ++c) {
    s.Push(0, c, 1);
    s.driver.Pull(0);
    for (const std::string& line : s.Take()) {
      if (line.starts_with("eval") || line == "limit") {
        evals.push_back(std::to_string(c + 1) + " " + line);
      }
    }
  }
  CHECK(evals == Lines{"3 eval", "6 eval", "7 limit", "7 eval must"});
  CHECK(s.driver.limit_reached());
  CHECK(s.driver.iteration() == 9);
  CHECK_FALSE(s.driver.EndRun());  // ended already: no second last evaluation
  CHECK(s.Take().empty());
}

TEST_CASE("driver: EndRun evaluates once and ends the run") {
  Scripted s(Config("asp", 2));
  s.Take();
  CHECK(s.driver.EndRun());
  CHECK_FALSE(s.driver.EndRun());
  CHECK(s.Take() == Lines{"eval must"});
  CHECK(s.driver.limit_reached());
}

TEST_CASE("driver: replies held while training holds go out in order when it goes on") {
  Scripted s(Config("asp", 3), DriverOptions{.min_workers = 3});
  s.Push(0, 0, 1);
  s.Push(1, 0, 1);
  s.Take();
  s.driver.Lose(2);
  CHECK(s.driver.holding());
  CHECK(s.Take() == Lines{"hold 2"});
  s.driver.Pull(1);
  s.driver.Pull(0);
  CHECK(s.Take().empty());  // ASP would answer at once: held
  s.Push(0, 1, 1);          // a push in flight still counts
  CHECK(s.Take() == Lines{"stage 0 c1 p0 x1", "apply 0.5 v3"});
  s.driver.Attach(2, {});
  s.driver.Join(2, 0);
  CHECK_FALSE(s.driver.holding());
  // The version is the one at the release, as for a reply sent then.
  CHECK(s.Take() == Lines{"go on 3", "model 1 v3 b0 t-1", "model 0 v3 b0 t-1"});
  CHECK_FALSE(s.driver.pull_pending(0));
  CHECK_FALSE(s.driver.pull_pending(1));
}

TEST_CASE("driver: a worker lost while its reply is held gets nothing") {
  Scripted s(Config("asp", 3), DriverOptions{.min_workers = 3});
  s.Push(0, 0, 1);
  s.Push(1, 0, 1);
  s.driver.Lose(2);
  s.driver.Pull(1);
  s.driver.Pull(0);
  s.driver.Lose(1);
  s.Take();
  for (WorkerId w : {1, 2}) {
    s.driver.Attach(w, {});
    s.driver.Join(w, 0);
  }
  // Worker 1's pull went with it; the newcomer on rank 1 has not pulled.
  CHECK(s.Take() == Lines{"go on 3", "model 0 v2 b0 t-1"});
  CHECK_FALSE(s.driver.pull_pending(1));
}

TEST_CASE("driver: a late joiner's clock is offset; SyncNow goes out in its own count") {
  PolicyConfig config = Config("abps", 2);
  config.job.batch = 16;
  config.chunk = 4;
  Scripted s(config);
  for (int64_t round = 0; round < 3; ++round) {
    s.Push(0, round, 16);
    s.Push(1, round, 16);
    s.driver.Pull(0);
    s.driver.Pull(1);
  }
  CHECK(s.driver.iteration() == 3);
  s.driver.Lose(1);
  s.driver.Attach(1, {});
  s.driver.Join(1, 0);  // a fresh worker: its first push is its clock 0
  s.driver.Pull(1);
  CHECK(s.driver.worker_clock(1) == 0);
  CHECK(s.driver.policy().clock(1) == 3);
  s.Take();
  s.Push(0, 3, 16, 1);
  CHECK(s.Take() == Lines{"stage 0 c3 p1 x16", "syncnow 1 r0"});
  const PushOutcome joined = s.Push(1, 0, 8, 2);
  CHECK_FALSE(joined.dropped);
  CHECK(s.Take().front() == "stage 1 c0 p2 x8");
  CHECK(s.driver.worker_clock(1) == 1);
  CHECK(s.driver.iteration() == 4);
}

TEST_CASE("driver: the batch and token set travel with the next reply, once") {
  PolicyConfig config = Config("token", 2);
  config.job.batch = 8;
  config.token_size = 4;  // worker 0 owns tokens 0 and 1, worker 1 tokens 2 and 3
  Scripted token(config);
  CHECK(token.Take() == Lines{"model 0 v0 b0 t0", "model 1 v0 b0 t2", "eval must"});
  token.Push(1, 0, 4);
  CHECK(token.Take() == Lines{"stage 1 c0 p0 x4", "continue 1 v0 b0 t3"});

  config.name = "lbbsp";
  config.job.batch = 16;
  Scripted lb(config);
  CHECK(lb.Take() == Lines{"model 0 v0 b16 t-1", "model 1 v0 b16 t-1", "eval must"});
}

TEST_CASE("summary: ratios over workers that stepped, capped at 1") {
  std::vector<WorkerTotals> totals(3);
  totals[0] = {.steps = 4, .compute_s = 2, .straggle_s = 1, .wait_s = 5, .bytes_sent = 100};
  totals[1] = {.steps = 2, .compute_s = 30, .wait_s = 1, .bytes_sent = 300};
  totals[2] = {.steps = 0, .compute_s = 9, .bytes_sent = 7};  // never stepped: left out
  const RunSummary summary = Summarize(totals, 10);
  CHECK(summary.compute_ratio_mean == doctest::Approx((0.3 + 1.0) / 2));
  CHECK(summary.compute_ratio_min == doctest::Approx(0.3));
  CHECK(summary.wait_share == doctest::Approx((0.5 + 0.1) / 2));
  CHECK(summary.bytes_sent_mean == doctest::Approx(200));
  CHECK(ComputeRatio(totals[1], 0) == 0);
  const RunSummary none = Summarize({}, 10);
  CHECK(none.compute_ratio_mean == 0);
  CHECK(none.compute_ratio_min == 0);
}

}  // namespace
}  // namespace dmlps::sync
