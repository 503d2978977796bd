// Workers that leave and join a running job: every policy goes on with the
// live workers, waits for no one gone, and keeps its invariants
// (docs/algorithms-robustness.md, "Workers leaving and joining" and each model's
// "Membership"); a saved policy state restores where it stood.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>

#include "dmlps/sync/lbbsp.h"
#include "dmlps/sync/policy.h"
#include "dmlps/sync/token.h"
#include "policy_test_util.h"

namespace dmlps::sync::testing {
namespace {

std::unique_ptr<Policy> MakeMember(const std::string& name, int64_t n) {
  return MakeJoined(
      PolicyConfig{.name = name, .job = {.workers = n, .batch = 32}, .staleness = 1, .backup = 1});
}

TEST_CASE("membership: BSP's barrier shrinks when a worker that has not pushed is lost") {
  auto bsp = MakeMember("bsp", 4);
  Actions a;
  for (WorkerId w = 0; w < 3; ++w) {
    bsp->PushArrived(w, {0, 0, 10, true}, &a);
    bsp->PullRequested(w, &a);
  }
  CHECK(Count<Apply>(a) == 0);
  CHECK(Count<Hold>(a) == 3);
  a.clear();
  bsp->WorkerLeft(3, &a);
  REQUIRE(Count<Apply>(a) == 1);
  CHECK(std::get<Apply>(a[0]).scale == doctest::Approx(1.0 / 30));
  for (WorkerId w = 0; w < 3; ++w) CHECK(CountFor<ReplyModel>(a, w) == 1);
  CHECK(bsp->iteration() == 1);
  CHECK(bsp->live_workers() == 3);
  // The next round needs the three live workers only.
  CHECK(Count<Apply>(PushEach(bsp.get(), {0, 1, 2}, {1, 1, 10, true})) == 1);
  CHECK(bsp->iteration() == 2);
  // Leaving twice, or a rank never joined, changes nothing.
  a.clear();
  bsp->WorkerLeft(3, &a);
  CHECK(a.empty());
  CHECK(bsp->live_workers() == 3);
}

TEST_CASE("membership: BSP keeps the gradient of a worker lost after its push, without waiting") {
  auto bsp = MakeMember("bsp", 3);
  Actions a;
  bsp->PushArrived(0, {0, 0, 10, true}, &a);
  bsp->WorkerLeft(0, &a);
  CHECK(Count<Apply>(a) == 0);  // 1 and 2 have not pushed
  bsp->PushArrived(1, {0, 0, 20, true}, &a);
  CHECK(Count<Apply>(a) == 0);
  bsp->PushArrived(2, {0, 0, 30, true}, &a);
  REQUIRE(Count<Apply>(a) == 1);
  const auto apply = std::find_if(a.begin(), a.end(), [](const Action& x) { return Is<Apply>(x); });
  // Its 10 samples are in the mean.
  CHECK(std::get<Apply>(*apply).scale == doctest::Approx(1.0 / 60));
  CHECK(Count<Stage>(a) == 3);
}

TEST_CASE("membership: a worker joins a BSP run in the current round and gets the model") {
  auto bsp = MakeMember("bsp", 2);
  Actions a = PushEach(bsp.get(), {0, 1}, {0, 0, 8, true});
  REQUIRE(bsp->iteration() == 1);
  const WorkerId w = bsp->AddWorker();
  CHECK(w == 2);
  CHECK_FALSE(bsp->joined(w));
  bsp->WorkerJoined(w, &a);
  CHECK(bsp->clock(w) == 1);  // it pushes in round 1
  a.clear();
  bsp->PullRequested(w, &a);
  CHECK(CountFor<ReplyModel>(a, w) == 1);
  a = PushEach(bsp.get(), {0, 1}, {1, 1, 8, true});
  CHECK(Count<Apply>(a) == 0);  // the round waits for the newcomer
  bsp->PushArrived(w, {1, 1, 8, true}, &a);
  CHECK(Count<Apply>(a) == 1);
  CHECK(Count<Drop>(a) == 0);
}

TEST_CASE("membership: SSP's minimum clock ignores the lost worker") {
  auto ssp = MakeMember("ssp", 3);  // staleness 1
  Actions a;
  for (int64_t c = 0; c < 2; ++c) {
    for (WorkerId w = 0; w < 2; ++w) ssp->PushArrived(w, {c, 0, 1, true}, &a);
  }
  a.clear();
  ssp->PullRequested(0, &a);  // clock 2, the slowest at 0: 2 - 0 > 1
  CHECK(CountFor<Hold>(a, 0) == 1);
  a.clear();
  ssp->WorkerLeft(2, &a);
  CHECK(ssp->MinClock() == 2);
  CHECK(CountFor<ReplyModel>(a, 0) == 1);
  // A newcomer starts at the slowest live clock, so it holds no one back.
  ssp->WorkerJoined(2, &a);
  CHECK(ssp->clock(2) == 2);
  CHECK(ssp->MinClock() == 2);
}

TEST_CASE("membership: ASP's iteration keeps rising as workers leave") {
  auto asp = MakeMember("asp", 4);
  Actions a;
  for (WorkerId w = 0; w < 3; ++w) asp->PushArrived(w, {0, 0, 1, true}, &a);
  CHECK(asp->iteration() == 0);
  asp->WorkerLeft(3, &a);
  CHECK(asp->iteration() == 1);  // three pushes of three live workers
  for (WorkerId w = 0; w < 3; ++w) asp->PushArrived(w, {1, 0, 1, true}, &a);
  CHECK(asp->iteration() == 2);
  const auto last =
      std::find_if(a.rbegin(), a.rend(), [](const Action& x) { return Is<Apply>(x); });
  CHECK(std::get<Apply>(*last).scale == doctest::Approx(1.0 / 3));  // 1/N of the live workers
}

TEST_CASE("membership: backup workers recount: N - b of the live workers close the round") {
  auto backup = MakeMember("backup", 4);  // b = 1: 3 of 4
  Actions a = PushEach(backup.get(), {0, 1}, {0, 0, 5, true});
  CHECK(Count<Apply>(a) == 0);
  backup->WorkerLeft(3, &a);  // 2 of 3 now suffice
  CHECK(Count<Apply>(a) == 1);
  CHECK(backup->iteration() == 1);
  a.clear();
  backup->WorkerLeft(2, &a);
  backup->WorkerLeft(1, &a);
  // One worker left, b = 1: every push of it closes a round.
  backup->PushArrived(0, {1, 1, 5, true}, &a);
  CHECK(Count<Apply>(a) == 1);
  CHECK(backup->iteration() == 2);
}

TEST_CASE("membership: WBSP's round closes without the lost worker, scaled by the live count") {
  auto wbsp = MakeMember("wbsp", 3);
  Actions a;
  wbsp->PushArrived(0, {0, 0, 8, true}, &a);
  wbsp->PushArrived(0, {1, 0, 8, true}, &a);
  wbsp->PushArrived(1, {0, 0, 8, true}, &a);
  CHECK(Count<ApplyDelta>(a) == 0);
  a.clear();
  wbsp->WorkerLeft(2, &a);
  REQUIRE(Count<ApplyDelta>(a) == 1);
  CHECK(std::get<ApplyDelta>(a[0]).scale == doctest::Approx(1.0 / 2));
  CHECK(wbsp->iteration() == 1);
  // Both live workers are told to download at their next push.
  a.clear();
  wbsp->PushArrived(0, {2, 0, 8, true}, &a);
  REQUIRE(CountFor<Continue>(a, 0) == 1);
  CHECK(std::get<Continue>(a.back()).download);
}

TEST_CASE("membership: A-BSP's SyncNow goes to the live workers only") {
  auto abps =
      MakeJoined(PolicyConfig{.name = "abps", .job = {.workers = 4, .batch = 32}, .chunk = 8});
  Actions a;
  abps->WorkerLeft(2, &a);
  abps->PushArrived(0, {0, 0, 32, true}, &a);
  CHECK(Count<SyncNow>(a) == 2);
  CHECK(CountFor<SyncNow>(a, 1) == 1);
  CHECK(CountFor<SyncNow>(a, 3) == 1);
  CHECK(CountFor<SyncNow>(a, 2) == 0);
  abps->PushArrived(1, {0, 0, 8, true}, &a);
  abps->PushArrived(3, {0, 0, 16, true}, &a);
  REQUIRE(Count<Apply>(a) == 1);
}

TEST_CASE("membership: LB-BSP splits B over the live workers when one leaves or joins") {
  PolicyConfig config{.name = "lbbsp", .job = {.workers = 4, .batch = 30}};
  auto policy = MakeJoined(config);
  auto* lb = dynamic_cast<LbBspPolicy*>(policy.get());
  REQUIRE(lb != nullptr);
  auto live_sum = [&] {
    int64_t sum = 0;
    for (WorkerId w = 0; w < lb->num_workers(); ++w) sum += lb->joined(w) ? lb->batch(w) : 0;
    return sum;
  };
  CHECK(live_sum() == 120);
  Actions a;
  lb->WorkerLeft(1, &a);
  CHECK(lb->batch(1) == 0);
  CHECK(live_sum() == 120);
  for (WorkerId w : {0, 2, 3}) CHECK(lb->batch(w) == 40);
  // The next round's replies carry the new split.
  REQUIRE(Count<Apply>(PushEach(lb, {0, 2, 3}, {0, 0, 30, true})) == 1);
  a.clear();
  lb->PullRequested(0, &a);
  REQUIRE(a.size() == 2);
  CHECK(Is<SetBatch>(a[0]));
  CHECK(std::get<SetBatch>(a[0]).samples == 40);
  // A newcomer on a new rank: a share as large as the mean, B unchanged.
  const WorkerId w = lb->AddWorker();
  lb->WorkerJoined(w, {.max_batch = 0}, &a);
  CHECK(live_sum() == 120);
  CHECK(lb->batch(w) == 30);
  CHECK(lb->batch(1) == 0);
  // A cap is respected.
  lb->WorkerLeft(w, &a);
  lb->WorkerJoined(1, {.max_batch = 10}, &a);
  CHECK(lb->batch(1) == 10);
  CHECK(live_sum() == 120);
}

TEST_CASE("membership: tokens a lost worker held are re-issued to the waiting workers") {
  auto policy = MakeJoined(
      PolicyConfig{.name = "token", .job = {.workers = 3, .batch = 16}, .token_size = 16});
  auto* token = dynamic_cast<TokenPolicy*>(policy.get());
  REQUIRE(token->tokens_per_iteration() == 3);
  CHECK(Count<Grant>(PullEach(token, 3)) == 3);
  // The last token is in flight on worker 2.
  CHECK(Count<Hold>(PushEach(token, {0, 1}, {0, 0, 16, true})) == 2);
  Actions a;
  token->WorkerLeft(2, &a);
  REQUIRE(Count<Grant>(a) == 1);
  const WorkerId helper = WorkerOf(a[0]);
  CHECK(helper != 2);
  CHECK(CountFor<Continue>(a, helper) == 1);
  a.clear();
  token->PushArrived(helper, {1, 0, 16, true}, &a);
  REQUIRE(Count<Apply>(a) == 1);
  CHECK(token->iteration() == 1);
  // The next iteration deals all three tokens to the two live workers.
  CHECK(CountFor<ReplyModel>(a, 0) == 1);
  CHECK(CountFor<ReplyModel>(a, 1) == 1);
  CHECK(CountFor<ReplyModel>(a, 2) == 0);
}

// Plays a cluster against a policy the way the server does, with workers
// lost and joining at random, and checks that some worker can always act
// (nothing waits for a worker gone), that no push is refused, and the
// policy's invariants.
struct MembershipDriver {
  enum class Phase { kPull, kWaiting, kCompute };
  struct Worker {
    Phase phase = Phase::kPull;
    int64_t clock = 0;
    int64_t base = 0;
  };

  MembershipDriver(const PolicyConfig& config, uint64_t seed) : config(config), rng(seed) {
    Result<std::unique_ptr<Policy>> made = MakePolicy(config);
    REQUIRE(made.ok());
    policy = std::move(made).value();
    Actions a;
    for (WorkerId w = 0; w < config.job.workers; ++w) {
      policy->WorkerJoined(w, &a);
      workers[w] = Worker{};
    }
    local = policy->mode() == WorkerMode::kLocal || policy->mode() == WorkerMode::kLocalOverlap ||
            policy->mode() == WorkerMode::kToken;
  }

  void Carry(const Actions& actions) {
    for (const Action& a : actions) {
      // Backup's late pushes are dropped by design (late); nothing else is.
      if (const auto* drop = std::get_if<Drop>(&a); drop != nullptr && !drop->late) {
        FAIL_CHECK("push dropped: " << drop->reason);
      }
      if (WorkerOf(a) >= 0 &&
          (Is<ReplyModel>(a) || Is<Continue>(a) || Is<SyncNow>(a) || Is<Grant>(a))) {
        REQUIRE_MESSAGE(policy->joined(WorkerOf(a)), "action for a worker gone");
      }
      if (Is<ReplyModel>(a)) {
        Worker& w = workers.at(WorkerOf(a));
        w.phase = Phase::kCompute;
        w.base = policy->version();
        if (config.name == "ssp") CHECK(w.clock - policy->MinClock() <= config.staleness);
      } else if (const auto* next = std::get_if<Continue>(&a)) {
        workers.at(next->worker).phase = next->download ? Phase::kPull : Phase::kCompute;
      }
    }
    if (auto* lb = dynamic_cast<LbBspPolicy*>(policy.get())) {
      int64_t sum = 0;
      for (WorkerId w = 0; w < lb->num_workers(); ++w) {
        if (!lb->joined(w)) CHECK(lb->batch(w) == 0);
        sum += lb->batch(w);
      }
      if (lb->live_workers() > 0) CHECK(sum == lb->global_batch());
    }
  }

  // One event; false when no live worker can act.
  bool Step() {
    const double roll = std::uniform_real_distribution<double>(0, 1)(rng);
    Actions a;
    if (roll < 0.02 && policy->live_workers() > 1) {
      std::vector<WorkerId> live;
      for (const auto& [id, w] : workers) live.push_back(id);
      const WorkerId gone = live[std::uniform_int_distribution<size_t>(0, live.size() - 1)(rng)];
      workers.erase(gone);
      policy->WorkerLeft(gone, &a);
      Carry(a);
      ++left;
      return true;
    }
    if (roll < 0.04 && policy->live_workers() < config.job.workers + 2) {
      WorkerId w = -1;
      for (WorkerId r = 0; r < policy->num_workers() && w < 0; ++r) {
        if (!policy->joined(r)) w = r;
      }
      if (w < 0) w = policy->AddWorker();
      policy->WorkerJoined(w, &a);
      workers[w] = Worker{Phase::kPull, policy->clock(w), 0};
      Carry(a);
      ++joined;
      return true;
    }
    std::vector<WorkerId> can;
    for (const auto& [id, w] : workers) {
      if (w.phase != Phase::kWaiting) can.push_back(id);
    }
    if (can.empty()) return false;
    const WorkerId id = can[std::uniform_int_distribution<size_t>(0, can.size() - 1)(rng)];
    Worker& w = workers[id];
    if (w.phase == Phase::kPull) {
      w.phase = Phase::kWaiting;
      policy->PullRequested(id, &a);
    } else {
      PushInfo push{w.clock, w.base, config.job.batch, true};
      push.batch = config.job.batch;
      push.busy_s = 0.01 * static_cast<double>(1 + id % 3);
      ++w.clock;
      // Sync modes pull with the push; local modes wait for the answer.
      w.phase = local ? Phase::kWaiting : Phase::kPull;
      policy->PushArrived(id, push, &a);
    }
    Carry(a);
    return true;
  }

  PolicyConfig config;
  std::mt19937_64 rng;
  std::unique_ptr<Policy> policy;
  std::map<WorkerId, Worker> workers;
  bool local = false;
  int64_t left = 0;
  int64_t joined = 0;
};

TEST_CASE("membership: every policy goes on through random losses and joins") {
  for (std::string name : {"bsp", "asp", "ssp", "backup", "wbsp", "wbsp-overlap", "abps", "lbbsp",
                           "token", "localsgd", "async-localsgd"}) {
    for (uint64_t seed = 1; seed <= 5; ++seed) {
      CAPTURE(name);
      CAPTURE(seed);
      PolicyConfig config{.name = name,
                          .job = {.workers = 4, .batch = 16},
                          .staleness = 2,
                          .backup = 1,
                          .chunk = 4,
                          .rebalance_every = 2,
                          .token_size = 8};
      MembershipDriver driver(config, seed);
      int64_t steps = 0;
      while (driver.policy->iteration() < 60 && steps < 20000) {
        REQUIRE_MESSAGE(driver.Step(), "no live worker can act: the policy waits for one gone");
        ++steps;
      }
      CHECK(driver.policy->iteration() >= 60);
      CHECK(driver.left > 0);
      CHECK(driver.joined > 0);
    }
  }
}

TEST_CASE(
    "membership: a saved policy state restores the version, the iteration and LB-BSP's split") {
  PolicyConfig config{.name = "lbbsp", .job = {.workers = 3, .batch = 20}, .rebalance_every = 1};
  auto policy = MakeJoined(config);
  Actions a;
  for (int64_t round = 0; round < 3; ++round) {
    for (WorkerId w = 0; w < 3; ++w) {
      PushInfo push{round, round, 20, true};
      push.busy_s = 0.01 * static_cast<double>(w + 1);
      policy->PushArrived(w, push, &a);
    }
  }
  auto* lb = dynamic_cast<LbBspPolicy*>(policy.get());
  const std::vector<int64_t> split{lb->batch(0), lb->batch(1), lb->batch(2)};
  CHECK(split[0] > split[2]);  // the faster worker got more
  const PolicyState state = policy->Save();
  CHECK(state.version == 3);
  CHECK(state.iteration == 3);

  Result<std::unique_ptr<Policy>> fresh = MakePolicy(config);
  REQUIRE(fresh.ok());
  (*fresh)->Restore(state);
  for (WorkerId w = 0; w < 3; ++w) (*fresh)->WorkerJoined(w, &a);
  auto* restored = dynamic_cast<LbBspPolicy*>(fresh->get());
  CHECK(restored->version() == 3);
  CHECK(restored->iteration() == 3);
  for (WorkerId w = 0; w < 3; ++w) {
    CHECK(restored->batch(w) == split[w]);
    CHECK(restored->clock(w) == 3);
  }
  // It goes on: round 3's pushes on version 3 are accepted.
  CHECK(Count<Drop>(PushEach(restored, {0, 1, 2}, {3, 3, 10, true})) == 0);
  CHECK(restored->iteration() == 4);

  // A split of another cluster size is ignored.
  PolicyConfig bigger = config;
  bigger.job.workers = 4;
  Result<std::unique_ptr<Policy>> other = MakePolicy(bigger);
  REQUIRE(other.ok());
  (*other)->Restore(state);
  auto* other_lb = dynamic_cast<LbBspPolicy*>(other->get());
  CHECK(other_lb->iteration() == 3);
  for (WorkerId w = 0; w < 4; ++w) CHECK(other_lb->batch(w) == 20);

  // The asynchronous policies restore their iteration, and rejoining
  // workers start there.
  auto ssp = MakeMember("ssp", 2);
  for (int64_t c = 0; c < 4; ++c) {
    for (WorkerId w = 0; w < 2; ++w) ssp->PushArrived(w, {c, 0, 1, true}, &a);
  }
  Result<std::unique_ptr<Policy>> ssp2 =
      MakePolicy({.name = "ssp", .job = {.workers = 2}, .staleness = 1});
  REQUIRE(ssp2.ok());
  (*ssp2)->Restore(ssp->Save());
  (*ssp2)->WorkerJoined(0, &a);
  CHECK((*ssp2)->iteration() == 4);
  CHECK((*ssp2)->clock(0) == 4);
}

}  // namespace
}  // namespace dmlps::sync::testing
