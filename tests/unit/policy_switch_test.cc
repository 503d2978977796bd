// Sync-Switch as docs/algorithms.md states it ("Sync-Switch"): BSP's answers
// before the switch, ASP's after it, a switch only at a quiescent point,
// and the online mode switching on a transient straggler and back; workers
// played in virtual time, one of them 4x slower.
#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "dmlps/sync/policy.h"
#include "dmlps/sync/switching.h"
#include "dmlps/sync/syncswitch.h"
#include "driver_test_util.h"
#include "policy_test_util.h"

namespace dmlps::sync::testing {
namespace {

PolicyConfig SwitchConfig(int64_t n, double at, int64_t max_iterations) {
  return {.name = "sync-switch",
          .job = {.workers = n, .max_iterations = max_iterations},
          .switch_at = at};
}

PolicyConfig OnlineConfig(int64_t n) {
  return {.name = "sync-switch", .job = {.workers = n}, .switch_online = true};
}

TEST_CASE("sync-switch: names, and the settings MakePolicy refuses") {
  CHECK(MakeJoined(SwitchConfig(2, 0.25, 100))->Name() == "sync-switch:0.25");
  CHECK(MakeJoined(OnlineConfig(2))->Name() == "sync-switch:online");
  // Nothing to place the switch by.
  CHECK_FALSE(MakePolicy(SwitchConfig(2, 0.25, 0)).ok());
  CHECK_FALSE(MakePolicy(SwitchConfig(2, 1.5, 100)).ok());
  PolicyConfig by_target = SwitchConfig(2, 0.5, 0);
  by_target.job.target_accuracy = 0.8;
  CHECK(MakePolicy(by_target).ok());
}

// What a play saw.
struct SwitchPlayed {
  std::vector<Switch> switches;  // in order
  std::vector<double> switch_times;
  int64_t drops = 0;
  int64_t pushes = 0;
};

// Plays the workers of `driven`'s SwitchingPolicy (sync mode: pull, step,
// push, pull) in virtual time until `until`; step_s(w, now) is worker w's
// next step. Checks on the way what holds under every switch: when a switch
// is done no worker is computing and every pull it releases gets one
// version; under BSP (not draining) each update follows exactly one push
// per live worker; under ASP (not draining) every pull is answered at once
// and each push is one update at 1/N.
SwitchPlayed Play(DrivenPolicy* driven, const std::function<double(WorkerId, double)>& step_s,
                  double until) {
  const auto* switching = &driven->policy_as<SwitchingPolicy>();
  const int64_t n = driven->num_workers();
  VirtualTime time;
  std::vector<int64_t> clock(n, 0);
  std::vector<int64_t> base(n, 0);
  std::vector<double> took(n, 0);
  std::vector<bool> computing(n, false);
  int64_t pushes_in_round = 0;
  SwitchPlayed played;
  const auto play = [&](const Effects& effects) {
    std::optional<int64_t> released_version;
    for (const Effect& e : effects) {
      if (const auto* s = std::get_if<effect::Switched>(&e)) {
        played.switches.push_back(s->change);
        played.switch_times.push_back(time.now());
        if (s->change.done) {
          for (WorkerId w = 0; w < n; ++w) CHECK_FALSE(computing[w]);
          released_version = switching->version();
          pushes_in_round = 0;
        }
      } else if (const auto* sent = std::get_if<effect::ModelSent>(&e)) {
        const WorkerId w = sent->worker;
        if (released_version) CHECK(sent->reply.version == *released_version);
        base[w] = sent->reply.version;
        computing[w] = true;
        took[w] = step_s(w, time.now());
        time.Start(w, took[w]);
      } else if (std::holds_alternative<effect::Dropped>(e)) {
        ++played.drops;
      }
    }
  };
  play(driven->StartPulled());
  while (time.Due(until)) {
    const WorkerId w = time.Next();
    computing[w] = false;
    PushInfo push{clock[w], base[w], 8, true};
    push.cycle_s = took[w];
    ++clock[w];
    ++played.pushes;
    const std::string running = switching->running();
    const bool draining = switching->switching();
    driven->Push(w, push);
    Effects effects = driven->Take();
    const std::vector<effect::Applied> applied = All<effect::Applied>(effects);
    const bool steady = !draining && !switching->switching();
    if (running == "asp" && steady) {
      REQUIRE(applied.size() == 1);
      CHECK(applied[0].with_optimizer);
      CHECK(applied[0].scale == doctest::Approx(1.0 / static_cast<double>(n)));
    } else if (running == "bsp") {
      ++pushes_in_round;
      if (steady) CHECK(applied.size() == (pushes_in_round == n ? 1U : 0U));
      if (!applied.empty()) pushes_in_round = 0;
    }
    driven->driver.Pull(w);
    const Effects pulled = driven->Take();
    if (!switching->switching() && switching->running() == "asp" && running == "asp") {
      CHECK(Count<effect::ModelSent>(pulled, w) == 1);
    }
    effects.insert(effects.end(), pulled.begin(), pulled.end());
    play(effects);
  }
  return played;
}

TEST_CASE("sync-switch: BSP's answers before the switch, ASP's after it") {
  // Scripted: 3 equal workers, switch after half of 8 iterations. The same
  // events go to a plain bsp until the switch is decided, and to a fresh asp
  // once it is done (its clocks and versions counted from there).
  const int64_t n = 3;
  auto policy = MakeJoined(SwitchConfig(n, 0.5, 8));
  PolicyConfig plain;
  plain.job.workers = n;
  plain.name = "bsp";
  auto bsp = MakeJoined(plain);
  plain.name = "asp";
  auto asp = MakeJoined(plain);
  auto* switching = dynamic_cast<SwitchingPolicy*>(policy.get());
  REQUIRE(switching != nullptr);
  std::vector<int64_t> clock(n, 0);
  std::vector<int64_t> base(n, 0);
  std::vector<int64_t> asp_clock(n, 0);
  int64_t switched_version = -1;
  auto same = [](const Actions& a, const Actions& b) {
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      CHECK(a[i].index() == b[i].index());
      CHECK(WorkerOf(a[i]) == WorkerOf(b[i]));
    }
  };
  same(PullEach(policy.get(), n), PullEach(bsp.get(), n));
  bool decided = false;
  for (int64_t step = 0; step < 40 * n; ++step) {
    const WorkerId w = step % n;
    PushInfo push{clock[w], base[w], 8, true};
    Actions actions = PushActions(policy.get(), w, push);
    policy->PullRequested(w, &actions);
    ++clock[w];
    if (!decided && Count<Switch>(actions) == 0) {
      Actions expected = PushActions(bsp.get(), w, push);
      bsp->PullRequested(w, &expected);
      same(actions, expected);
      CHECK(policy->version() == bsp->version());
    }
    decided = decided || Count<Switch>(actions) > 0;
    if (switched_version >= 0) {
      PushInfo inner = push;
      inner.clock = asp_clock[w]++;
      inner.base_version -= switched_version;
      Actions expected = PushActions(asp.get(), w, inner);
      asp->PullRequested(w, &expected);
      same(actions, expected);
    }
    if (const Switch* s = Find<Switch>(actions); s != nullptr && s->done) {
      // Decided at 4 of 8 iterations; done once all wait, after one more round.
      CHECK(s->from == "bsp");
      CHECK(s->to == "asp");
      CHECK(s->iteration >= 4);
      switched_version = policy->version();
      Actions released = PullEach(asp.get(), n);
      CHECK(Count<ReplyModel>(actions) == n);
      CHECK(Count<ReplyModel>(released) == n);
    }
    for (const Action& a : actions) {
      if (Is<ReplyModel>(a)) base[WorkerOf(a)] = policy->version();
    }
  }
  CHECK(switching->running() == "asp");
  CHECK(switching->switches() == 1);
}

TEST_CASE("sync-switch: the switch waits for a round in progress and starts ASP on one model") {
  // Worker 1 pulled before the switch was decided: the round it is in must
  // still close (its push is needed), and only then does ASP start.
  auto policy = MakeJoined(SwitchConfig(2, 0.5, 2));
  auto* switching = dynamic_cast<SwitchingPolicy*>(policy.get());
  PullEach(policy.get(), 2);
  PushEach(policy.get(), {0, 1}, {0, 0, 8, true});  // round 0 closes: iteration 1 of 2 = 0.5
  CHECK(switching->switching());
  Actions actions;
  policy->PullRequested(0, &actions);
  policy->PullRequested(1, &actions);
  // Both wait, nothing is staged: quiescent, so the switch is done at once.
  REQUIRE(Count<Switch>(actions) == 1);
  CHECK(std::get<Switch>(actions[IndexOf<Switch>(actions)]).done);
  CHECK(Count<ReplyModel>(actions) == 2);
  CHECK(switching->running() == "asp");
  // Under ASP a push computed on version 1 applies at once.
  const Actions pushed = PushActions(policy.get(), 0, {1, 1, 8, true});
  CHECK(Count<Apply>(pushed) == 1);
}

TEST_CASE("sync-switch: a switch decided mid-round lets the round finish first") {
  PolicyConfig config = SwitchConfig(3, 0.5, 0);
  config.job.target_accuracy = 0.9;
  auto policy = MakeJoined(config);
  auto* switching = dynamic_cast<SwitchingPolicy*>(policy.get());
  PullEach(policy.get(), 3);
  Actions actions;
  policy->EvaluationSeen(0.1, &actions);  // acc_0
  CHECK(actions.empty());
  PushActions(policy.get(), 0, {0, 0, 8, true});  // round 0 in progress
  // Progress (0.6 - 0.1) / (0.9 - 0.1) = 0.625 >= 0.5: decided.
  policy->EvaluationSeen(0.6, &actions);
  REQUIRE(Count<Switch>(actions) == 1);
  CHECK_FALSE(std::get<Switch>(actions[0]).done);
  CHECK(std::get<Switch>(actions[0]).measured == doctest::Approx(0.625));
  // Worker 0 pushed and waits here; 1 and 2 still owe round 0 their pushes.
  actions.clear();
  policy->PullRequested(0, &actions);
  CHECK(CountFor<Hold>(actions, 0) == 1);
  PushActions(policy.get(), 1, {0, 0, 8, true});
  policy->PullRequested(1, &actions);
  CHECK(switching->running() == "bsp");
  actions = PushActions(policy.get(), 2, {0, 0, 8, true});
  CHECK(Count<Apply>(actions) == 1);  // the round's update, all three pushes
  CHECK(switching->running() == "bsp");
  policy->PullRequested(2, &actions);
  CHECK(switching->running() == "asp");
  CHECK(Count<ReplyModel>(actions) == 3);
}

TEST_CASE("sync-switch: an ASP to BSP switch waits for pushes in flight, then one model") {
  // The online mode: worker 3 slow for a while, then in step again.
  DrivenPolicy driven(OnlineConfig(4));
  auto step = [](WorkerId w, double now) { return w == 3 && now > 0.2 && now < 0.6 ? 0.04 : 0.01; };
  const SwitchPlayed played = Play(&driven, step, 3.0);
  CHECK(played.drops == 0);
  std::vector<std::string> done;
  for (const Switch& s : played.switches) {
    if (s.done) done.push_back(s.to);
  }
  REQUIRE(done.size() >= 2);
  CHECK(done[0] == "asp");
  CHECK(done[1] == "bsp");
  // The first switch follows the delay; the switch back comes after it ended.
  CHECK(played.switch_times.front() > 0.2);
  CHECK(played.switch_times.back() > 0.6);
  CHECK(driven.policy_as<SwitchingPolicy>().running() == "bsp");
}

TEST_CASE("sync-switch: online mode stays under ASP while a straggler stays slow") {
  DrivenPolicy driven(OnlineConfig(4));
  auto step = [](WorkerId w, double /*now*/) { return w == 3 ? 0.04 : 0.01; };
  const SwitchPlayed played = Play(&driven, step, 3.0);
  int64_t done = 0;
  for (const Switch& s : played.switches) done += s.done ? 1 : 0;
  CHECK(done == 1);
  CHECK(driven.policy_as<SwitchingPolicy>().running() == "asp");
}

TEST_CASE("sync-switch invariants under random speeds") {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    std::mt19937_64 rng(seed);
    const int64_t n = 2 + static_cast<int64_t>(seed % 4);
    const std::vector<double> step_s = RandomStepSeconds(rng, n);
    DrivenPolicy offline(SwitchConfig(n, 0.25, 200));
    const SwitchPlayed a = Play(
        &offline, [&](WorkerId w, double) { return step_s[w]; }, 10);
    CHECK(a.drops == 0);
    REQUIRE(a.switches.size() == 2);  // decided, done
    CHECK(a.switches[1].to == "asp");
    // Delays now and then on a random worker, as --delay-prob plays them.
    DrivenPolicy online(OnlineConfig(n));
    std::mt19937_64 delays(seed);
    const SwitchPlayed b = Play(
        &online, [&](WorkerId w, double) { return step_s[w] + (delays() % 50 == 0 ? 0.2 : 0.0); },
        5);
    CHECK(b.drops == 0);
  }
}

TEST_CASE("sync-switch: joins and losses during a drain") {
  auto policy = MakeJoined(SwitchConfig(3, 0.5, 2));
  auto* switching = dynamic_cast<SwitchingPolicy*>(policy.get());
  PullEach(policy.get(), 3);
  PushEach(policy.get(), {0, 1, 2}, {0, 0, 8, true});
  REQUIRE(switching->switching());
  Actions actions;
  policy->PullRequested(0, &actions);
  policy->PullRequested(1, &actions);
  CHECK(switching->running() == "bsp");
  // Worker 2 is lost before it pulled: everyone left waits, so the switch is done.
  policy->WorkerLeft(2, &actions);
  CHECK(switching->running() == "asp");
  CHECK(Count<ReplyModel>(actions) == 2);
  // A worker joining under ASP gets the model at once.
  actions.clear();
  policy->WorkerJoined(2, &actions);
  policy->PullRequested(2, &actions);
  CHECK(CountFor<ReplyModel>(actions, 2) == 1);
}

// Asks, at its first push, for a policy its maker cannot make.
class AskForTheUnknown : public SwitchDecider {
 public:
  std::string Name() const override { return "ask-unknown"; }
  std::string Initial() const override { return "bsp"; }
  std::optional<SwitchRequest> AfterPush(const SwitchContext& /*context*/, WorkerId /*w*/,
                                         const PushInfo& /*push*/) override {
    return SwitchRequest{"no-such-policy", "test", 0, 0};
  }
  std::optional<SwitchRequest> AfterEvaluation(const SwitchContext& /*context*/,
                                               double /*accuracy*/) override {
    return std::nullopt;
  }
};

TEST_CASE("sync-switch: a switch into a policy the maker cannot make releases the held workers") {
  InnerPolicyMaker make = [](std::string_view name, int64_t n) {
    if (name != "bsp") return Result<std::unique_ptr<Policy>>(Status::InvalidArgument("unknown"));
    PolicyConfig config;
    config.name = "bsp";
    config.job.workers = n;
    return MakePolicy(config);
  };
  SwitchingPolicy policy(2, std::make_unique<AskForTheUnknown>(), make);
  Actions actions;
  for (WorkerId w = 0; w < 2; ++w) policy.WorkerJoined(w, &actions);
  PullEach(&policy, 2);
  PushEach(&policy, {0, 1}, {0, 0, 8, true});
  REQUIRE(policy.switching());
  // Both wait and nothing is staged: the switch would be done here; it
  // cannot be, so BSP goes on and answers both.
  actions = PullEach(&policy, 2);
  CHECK_FALSE(policy.switching());
  CHECK(policy.running() == "bsp");
  CHECK(policy.switches() == 0);
  CHECK(CountFor<ReplyModel>(actions, 0) == 1);
  CHECK(CountFor<ReplyModel>(actions, 1) == 1);
}

}  // namespace
}  // namespace dmlps::sync::testing
