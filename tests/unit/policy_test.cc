// Drives each policy with scripted and randomized event sequences and checks
// the invariants docs/algorithms.md states for it ("BSP", "ASP", "SSP").
#include "dmlps/sync/policy.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "dmlps/sync/driver.h"
#include "policy_cluster_test_util.h"
#include "policy_test_util.h"

namespace dmlps::sync::testing {
namespace {

bool RepliesTo(const Actions& actions, WorkerId w) {
  return std::any_of(actions.begin(), actions.end(),
                     [&](const Action& a) { return Is<ReplyModel>(a) && WorkerOf(a) == w; });
}

std::unique_ptr<Policy> Make(const std::string& name, int64_t n, int64_t staleness = 3) {
  return MakeJoined({.name = name, .job = {.workers = n}, .staleness = staleness});
}

// Plays workers against a policy through a driver, the way the server does:
// each worker pulls, receives the model (with the version current at the
// reply), computes, and pushes with that base version. The order in which
// workers act is random. A push's payload is the version it was computed on.
class Cluster : private ScriptedCluster<int64_t> {
 public:
  Cluster(const std::string& name, int64_t n, uint64_t seed, int64_t staleness = 3)
      : ScriptedCluster({.name = name, .job = {.workers = n}, .staleness = staleness}),
        state(n),
        rng_(seed) {
    for (WorkerId w = 0; w < n; ++w) driver_->Attach(w, {});
    driver_->Start();  // every worker joins; none has pulled yet
  }
  enum class Phase { kIdle, kWaiting, kComputing };
  struct Worker {
    Phase phase = Phase::kIdle;
    int64_t base_version = 0;
    int64_t clock = 0;  // pushes done
    int64_t started_clock = -1;
  };
  // What a test checks as the cluster runs; each is optional.
  struct Checks {
    std::function<void(int64_t base)> staged;  // a push computed on version `base` is staged
    std::function<void(WorkerId w)> replied;   // w is sent the model, before it starts
    std::function<void(double scale)> applied;
  };

  using ScriptedCluster::policy;

  // One random step; returns false when no worker can act (a deadlock).
  bool Step(double unusable_fraction = 0) {
    std::vector<WorkerId> can_act;
    for (WorkerId w = 0; w < static_cast<WorkerId>(state.size()); ++w) {
      if (state[w].phase != Phase::kWaiting) can_act.push_back(w);
    }
    if (can_act.empty()) return false;
    const WorkerId w = can_act[std::uniform_int_distribution<size_t>(0, can_act.size() - 1)(rng_)];
    Worker& worker = state[w];
    version_before = policy().version();
    if (worker.phase == Phase::kIdle) {
      worker.phase = Phase::kWaiting;
      driver_->Pull(w);
    } else {
      PushInfo push{worker.clock, worker.base_version, 10 + w, true};
      push.usable = std::uniform_real_distribution<double>(0, 1)(rng_) >= unusable_fraction;
      worker.phase = Phase::kIdle;
      ++worker.clock;
      driver_->Push(w, push, push.base_version);
    }
    return true;
  }

  Checks checks;
  std::vector<Worker> state;
  int64_t replies = 0, applies = 0, stages = 0;
  int64_t version_before = 0;  // the model's version when the current event arrived

 private:
  // The driver's sink.
  void Stage(const HandledPush<int64_t>& push, double /*weight*/) override {
    if (checks.staged) checks.staged(push.payload);
    ++stages;
  }
  void Apply(double scale, bool with_optimizer, int64_t /*version*/) override {
    CHECK(with_optimizer);
    if (checks.applied) checks.applied(scale);
    ++applies;
  }
  void SendModel(WorkerId w, const Reply& reply) override {
    if (checks.replied) checks.replied(w);
    Worker& worker = state[w];
    REQUIRE(worker.phase == Phase::kWaiting);
    worker.phase = Phase::kComputing;
    worker.base_version = reply.version;
    worker.started_clock = worker.clock;
    ++replies;
  }
  void Dropped(WorkerId w, const Drop& drop) override {
    FAIL_CHECK("push of worker " << w << " dropped: " << drop.reason);
  }

  std::mt19937_64 rng_;
};

TEST_CASE("BSP: one sample-weighted apply per iteration, after every worker pushed") {
  auto bsp = Make("bsp", 3);
  CHECK(Count<ReplyModel>(PullEach(bsp.get(), 3)) == 3);  // iteration 0 may start at once

  Actions a = PushActions(bsp.get(), 0, {0, 0, 64, true});
  bsp->PullRequested(0, &a);
  CHECK(Count<Stage>(a) == 1);
  CHECK(std::get<Stage>(a[0]).weight == 64);
  CHECK(Count<Apply>(a) == 0);
  CHECK(Count<Hold>(a) == 1);  // worker 0 waits for the others
  a.clear();
  bsp->PushArrived(2, {0, 0, 32, true}, &a);
  bsp->PullRequested(2, &a);
  CHECK(Count<Apply>(a) == 0);
  a.clear();
  bsp->PushArrived(1, {0, 0, 32, true}, &a);
  REQUIRE(Count<Apply>(a) == 1);
  auto apply = std::find_if(a.begin(), a.end(), [](const Action& x) { return Is<Apply>(x); });
  CHECK(std::get<Apply>(*apply).scale == doctest::Approx(1.0 / 128));  // Σ b_i g_i / Σ b_i
  // The apply precedes the replies, and both waiting workers are released.
  CHECK(apply - a.begin() < IndexOf<ReplyModel>(a));
  CHECK(RepliesTo(a, 0));
  CHECK(RepliesTo(a, 2));
  CHECK_FALSE(RepliesTo(a, 1));  // it has not asked yet
  CHECK(bsp->version() == 1);
  a.clear();
  bsp->PullRequested(1, &a);
  CHECK(RepliesTo(a, 1));
}

TEST_CASE("BSP: a gradient computed on an old version is dropped, as is a repeated clock") {
  auto bsp = Make("bsp", 2);
  CHECK(OnlyDrop(PushStale(bsp.get(), 8)).reason.find("version 0") != std::string::npos);
  CHECK(bsp->clock(0) == 1);                             // not counted
  OnlyDrop(PushActions(bsp.get(), 0, {0, 1, 8, true}));  // clock 0 again
  CHECK(Count<Stage>(PushActions(bsp.get(), 0, {1, 1, 8, true})) == 1);
}

TEST_CASE("BSP: unusable pushes end the step but stage nothing; a round of them applies nothing") {
  auto bsp = Make("bsp", 2);
  PullEach(bsp.get(), 2);
  Actions a = PushActions(bsp.get(), 0, {0, 0, 8, false});
  bsp->PullRequested(0, &a);
  CHECK(Count<Stage>(a) == 0);
  CHECK(Count<Hold>(a) == 1);
  a = PushActions(bsp.get(), 1, {0, 0, 8, true});
  CHECK(Count<Stage>(a) == 1);
  REQUIRE(Count<Apply>(a) == 1);
  // Only the usable push's samples are in the mean.
  CHECK(Find<Apply>(a)->scale == doctest::Approx(1.0 / 8));
  CHECK(RepliesTo(a, 0));

  a.clear();
  bsp->PullRequested(1, &a);
  bsp->PushArrived(0, {1, 1, 8, false}, &a);
  bsp->PushArrived(1, {1, 1, 8, false}, &a);
  CHECK(Count<Apply>(a) == 0);
  CHECK(bsp->version() == 1);
  CHECK(bsp->MinClock() == 2);  // the round still advanced
}

TEST_CASE("BSP invariant under random interleavings: gradients applied at v were computed on v") {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Cluster cluster("bsp", 1 + static_cast<int64_t>(seed % 5), seed);
    const Policy& bsp = cluster.policy();
    cluster.checks.staged = [&](int64_t base) { CHECK(base == cluster.version_before); };
    cluster.checks.replied = [&](WorkerId w) {
      // No worker starts iteration c until every worker finished c - 1.
      CHECK(cluster.state[w].clock <= bsp.MinClock());
    };
    for (int step = 0; step < 2000; ++step) {
      REQUIRE(cluster.Step(/*unusable_fraction=*/0.1));  // BSP never deadlocks
    }
    // One apply per completed round (less rounds in which nothing was usable).
    CHECK(cluster.applies <= bsp.MinClock());
    CHECK(cluster.applies >= bsp.MinClock() * 8 / 10);
  }
}

TEST_CASE("ASP: every pull answered at once, every push applied at once scaled by 1/N") {
  auto asp = Make("asp", 4);
  CHECK(asp->Name() == "asp");
  Actions a;
  asp->PullRequested(3, &a);
  CHECK(RepliesTo(a, 3));
  for (int64_t c = 0; c < 5; ++c) {
    a.clear();
    asp->PushArrived(0, {c, c, 16, true}, &a);
    REQUIRE(a.size() == 2);
    CHECK(Is<Stage>(a[0]));
    CHECK(Is<Apply>(a[1]));
    CHECK(std::get<Apply>(a[1]).scale == doctest::Approx(0.25));
    a.clear();
    asp->PullRequested(0, &a);
    CHECK(RepliesTo(a, 0));  // worker 0 runs ahead freely
  }
  CHECK(asp->clock(0) == 5);
  CHECK(asp->MinClock() == 0);
  CHECK(asp->version() == 5);
}

TEST_CASE("SSP: a worker more than s clocks ahead of the slowest waits, and is released") {
  auto ssp = Make("ssp", 2, /*staleness=*/2);
  CHECK(ssp->Name() == "ssp:2");
  Actions a;
  for (int64_t c = 0; c < 2; ++c) {
    a.clear();
    ssp->PushArrived(0, {c, c, 8, true}, &a);
    ssp->PullRequested(0, &a);
    CHECK(RepliesTo(a, 0));  // clock 1 and 2: within 2 of worker 1's 0
  }
  a.clear();
  ssp->PushArrived(0, {2, 2, 8, true}, &a);
  ssp->PullRequested(0, &a);
  CHECK(Count<Hold>(a) == 1);  // clock 3 would be 3 ahead
  a.clear();
  ssp->PushArrived(1, {0, 0, 8, true}, &a);
  CHECK(RepliesTo(a, 0));  // the slowest moved: 3 - 1 <= 2
  CHECK(Count<Apply>(a) == 1);
}

TEST_CASE("SSP invariant under random interleavings: nobody starts more than s clocks ahead") {
  for (int64_t s : {0, 1, 3, 7}) {
    for (uint64_t seed = 1; seed <= 10; ++seed) {
      const int64_t n = 2 + static_cast<int64_t>(seed % 4);
      Cluster cluster("ssp", n, seed * 31 + s, s);
      int64_t max_lead = 0;
      cluster.checks.replied = [&](WorkerId w) {
        const int64_t lead = cluster.state[w].clock - cluster.policy().MinClock();
        CHECK(lead <= s);
        max_lead = std::max(max_lead, lead);
      };
      cluster.checks.applied = [&](double scale) { CHECK(scale == doctest::Approx(1.0 / n)); };
      for (int step = 0; step < 3000; ++step) REQUIRE(cluster.Step());
      // Every step applies on arrival.
      CHECK(cluster.applies == cluster.stages);
      CHECK(max_lead <= s);
      if (s > 0) CHECK(max_lead > 0);  // the bound is used, not just respected
    }
  }
}

TEST_CASE("ASP, SSP and DSSP take the server's momentum once every --momentum-every pushes") {
  // Each push stepping a heavy-ball momentum is what they do unless told;
  // with momentum_every N the optimizer takes the momentum's part once per N
  // pushes (docs/algorithms.md, "ASP"). The synchronous policies, whose
  // updates are rounds, take no such setting.
  for (const char* name : {"asp", "ssp", "dssp"}) {
    CAPTURE(name);
    PolicyConfig config{.name = name, .job = {.workers = 4}, .staleness = 3};
    CHECK(TakesMomentumEvery(config));
    CHECK(ServerOptimizerFor(config, 0.1, 0.9).momentum_every == 1);
    config.momentum_every = 4;
    const ServerOptimizer step = ServerOptimizerFor(config, 0.1, 0.9);
    CHECK(step.momentum_every == 4);
    CHECK(step.lr == doctest::Approx(0.1));
    CHECK(step.momentum == doctest::Approx(0.9));
    CHECK_FALSE(step.nesterov);
    CHECK(MakePolicy(config).ok());
    config.momentum_every = -1;
    Result<std::unique_ptr<Policy>> refused = MakePolicy(config);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().message().find("--momentum-every") != std::string::npos);
  }
  for (const char* name : {"bsp", "backup", "lbbsp", "wbsp"}) {
    CAPTURE(name);
    PolicyConfig config{.name = name, .job = {.workers = 4}};
    config.momentum_every = 4;
    CHECK_FALSE(TakesMomentumEvery(config));
    CHECK(ServerOptimizerFor(config, 0.1, 0.9).momentum_every == 1);
  }
}

TEST_CASE("MakePolicy refuses unknown names and impossible settings") {
  CHECK_FALSE(MakePolicy({.name = "wbsp2", .job = {.workers = 4}}).ok());
  CHECK_FALSE(MakePolicy({.name = "bsp", .job = {.workers = 0}}).ok());
  CHECK_FALSE(MakePolicy({.name = "ssp", .job = {.workers = 4}, .staleness = -1}).ok());
  Result<std::unique_ptr<Policy>> p = MakePolicy({.name = "nope", .job = {.workers = 4}});
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().message().find("bsp") != std::string::npos);
}

TEST_CASE("the policies that answer each push on its own: asp, ssp, dssp, async local SGD") {
  for (const char* name : {"asp", "ssp", "ssp:3", "dssp", "dssp:1:4", "async-localsgd"}) {
    CHECK_MESSAGE(AnswersEachPush(name), name);
  }
  for (const char* name : {"bsp", "backup:1", "lbbsp", "lbbsp-gpu", "wbsp", "abps", "token",
                           "localsgd", "auto", "sspx:3", ""}) {
    CHECK_FALSE_MESSAGE(AnswersEachPush(name), name);
  }
}

}  // namespace
}  // namespace dmlps::sync::testing
