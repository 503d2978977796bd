// Dynamic SSP as docs/algorithms.md states it ("DSSP"): the bound each
// worker gets, SSP as its special case, and workers played in virtual time,
// one of them 4x slower.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "dmlps/sync/dssp.h"
#include "dmlps/sync/policy.h"
#include "driver_test_util.h"
#include "policy_test_util.h"

namespace dmlps::sync::testing {
namespace {

PolicyConfig DsspConfig(int64_t n, int64_t low, int64_t high) {
  return {.name = "dssp", .job = {.workers = n}, .staleness_low = low, .staleness_high = high};
}

TEST_CASE("dssp: Name, and the ranges MakePolicy refuses") {
  CHECK(MakeJoined(DsspConfig(2, 1, 4))->Name() == "dssp:1-4");
  CHECK_FALSE(MakePolicy(DsspConfig(2, 3, 2)).ok());
  CHECK_FALSE(MakePolicy(DsspConfig(2, -1, 2)).ok());
}

TEST_CASE("dssp: a worker's bound is low plus the iterations of its that fit the slowest's") {
  auto policy = MakeJoined(DsspConfig(2, 1, 4));
  auto* dssp = dynamic_cast<DsspPolicy*>(policy.get());
  REQUIRE(dssp != nullptr);
  PullEach(policy.get(), 2);
  PushInfo slow{0, 0, 8, true};
  slow.cycle_s = 3;
  PushActions(policy.get(), 1, slow);
  PushInfo fast{0, 0, 8, true};
  fast.cycle_s = 1;
  for (int64_t c = 0; c < 5; ++c) {
    fast.clock = c;
    Actions actions = PushActions(policy.get(), 0, fast);
    CHECK(Count<Apply>(actions) == 1);
    actions.clear();
    policy->PullRequested(0, &actions);
    // Three of its 1 s iterations fit into the slowest's 3 s: bound 1 + 3.
    CHECK(dssp->bound(0) == 4);
    // Clock c + 1, the slowest at 1: up to 4 ahead, so not held.
    CHECK(CountFor<ReplyModel>(actions, 0) == 1);
  }
  // A 100x faster worker is capped at high.
  fast.clock = 5;
  fast.cycle_s = 0.03;
  Actions actions = PushActions(policy.get(), 0, fast);
  CHECK(dssp->bound(0) == 4);
  // Clock 6 is 5 ahead: held.
  policy->PullRequested(0, &actions);
  CHECK(CountFor<Hold>(actions, 0) == 1);
  // The slow worker catching up releases the held pull.
  slow.clock = 1;
  const Actions released = PushActions(policy.get(), 1, slow);
  CHECK(CountFor<ReplyModel>(released, 0) == 1);
}

TEST_CASE("dssp: with low == high it answers as ssp does") {
  std::mt19937_64 rng(5);
  auto dssp = MakeJoined(DsspConfig(3, 2, 2));
  PolicyConfig ssp_config = DsspConfig(3, 2, 2);
  ssp_config.name = "ssp";
  ssp_config.staleness = 2;
  auto ssp = MakeJoined(ssp_config);
  std::vector<int64_t> clock(3, 0);
  std::vector<bool> waiting(3, false);
  PullEach(dssp.get(), 3);
  PullEach(ssp.get(), 3);
  for (int event = 0; event < 500; ++event) {
    const WorkerId w = static_cast<WorkerId>(rng() % 3);
    if (waiting[w]) continue;
    PushInfo push{clock[w], 0, 8, true};
    push.cycle_s = 0.01 * static_cast<double>(1 + rng() % 10);
    ++clock[w];
    Actions a = PushActions(dssp.get(), w, push);
    Actions b = PushActions(ssp.get(), w, push);
    dssp->PullRequested(w, &a);
    ssp->PullRequested(w, &b);
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      CHECK(a[i].index() == b[i].index());
      CHECK(WorkerOf(a[i]) == WorkerOf(b[i]));
    }
    for (const Action& action : a) {
      if (Is<Hold>(action)) waiting[WorkerOf(action)] = true;
      if (Is<ReplyModel>(action)) waiting[WorkerOf(action)] = false;
    }
  }
}

// Plays n workers against a policy through the driver in virtual time
// (sync mode: pull, step, push, pull); returns the seconds the workers
// spent held. Checks that no worker starts more than `high` clocks ahead
// of the slowest and none is held while at most `low` ahead.
double PlaySsp(const PolicyConfig& config, const std::vector<double>& step_s, int64_t low,
               int64_t high, double until) {
  const auto n = static_cast<int64_t>(step_s.size());
  DrivenPolicy driven(config);
  const Policy& policy = driven.policy();
  driven.driver.Start();
  driven.Take();  // the first evaluation
  VirtualTime time;
  std::vector<int64_t> clock(n, 0);
  std::vector<double> held_since(n, -1);
  double held = 0;
  const auto play = [&](const Effects& effects) {
    for (const effect::ModelSent& sent : All<effect::ModelSent>(effects)) {
      const WorkerId w = sent.worker;
      CHECK(clock[w] - policy.MinClock() <= high);
      if (held_since[w] >= 0) held += time.now() - held_since[w];
      held_since[w] = -1;
      time.Start(w, step_s[w]);
    }
  };
  const auto pull = [&](WorkerId w) {
    driven.driver.Pull(w);
    if (driven.driver.pull_pending(w)) {  // held
      CHECK(clock[w] - policy.MinClock() > low);
      held_since[w] = time.now();
    }
    play(driven.Take());
  };
  for (WorkerId w = 0; w < n; ++w) pull(w);
  while (time.Due(until)) {
    const WorkerId w = time.Next();
    PushInfo push{clock[w], 0, 8, true};
    push.cycle_s = step_s[w];
    ++clock[w];
    driven.Push(w, push);
    play(driven.Take());
    pull(w);
  }
  return held;
}

TEST_CASE("dssp driver: a 4x slower worker holds the others up less than under ssp:low") {
  const std::vector<double> step_s = {0.01, 0.01, 0.01, 0.04};
  const double dssp = PlaySsp(DsspConfig(4, 1, 4), step_s, 1, 4, 20);
  PolicyConfig ssp = DsspConfig(4, 1, 4);
  ssp.name = "ssp";
  ssp.staleness = 1;
  const double ssp_low = PlaySsp(ssp, step_s, 1, 1, 20);
  CHECK(dssp > 0);  // the bound is reached: 4x faster outruns any bound
  CHECK(dssp < ssp_low);
}

TEST_CASE("dssp invariants under random speeds") {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    std::mt19937_64 rng(seed);
    const int64_t n = 2 + static_cast<int64_t>(seed % 4);
    const std::vector<double> step_s = RandomStepSeconds(rng, n);
    const int64_t low = static_cast<int64_t>(seed % 3);
    PlaySsp(DsspConfig(n, low, low + 3), step_s, low, low + 3, 5);
  }
}

}  // namespace
}  // namespace dmlps::sync::testing
