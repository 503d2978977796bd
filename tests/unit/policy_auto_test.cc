// The auto policy as docs/auto.md states it: SwitchingPolicy
// switches from and to every candidate at a point where every worker goes
// on from one model, with no push computed under one policy applied under
// the other; AutoDecider switches away from BSP for a steady straggler,
// stays for an even cluster, and records every decision. What its
// decisions read on shared cores and under delays:
// policy_auto_readings_test.cc.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "advise_test_util.h"
#include "auto_run_test_util.h"
#include "dmlps/auto/auto.h"
#include "dmlps/bench/experiment.h"
#include "dmlps/predict/replay.h"
#include "dmlps/sync/policy.h"
#include "dmlps/sync/switching.h"
#include "driver_test_util.h"
#include "policy_test_util.h"

namespace dmlps::sync::testing {
namespace {

using advise::fixtures::TableFor;
using autopolicy::AutoCandidates;
using autopolicy::AutoDecider;
using autopolicy::AutoSwitchBar;
using autopolicy::CheckAutoCandidate;
using autopolicy::PredictionBudget;

constexpr int64_t kBatch = kAutoBatch;

// Switches through `order`, one request every `every` pushes.
class ScriptedDecider : public SwitchDecider {
 public:
  ScriptedDecider(std::vector<std::string> order, int64_t every)
      : order_(std::move(order)), every_(every) {}
  std::string Name() const override { return "scripted"; }
  std::string Initial() const override { return order_.front(); }
  std::optional<SwitchRequest> AfterPush(const SwitchContext& context, WorkerId /*w*/,
                                         const PushInfo& /*push*/) override {
    if (++pushes_ % every_ != 0 || next_ >= order_.size()) return std::nullopt;
    if (context.running != order_[next_ - 1]) return std::nullopt;  // still draining
    return SwitchRequest{order_[next_], "scripted", 0, 0};
  }
  std::optional<SwitchRequest> AfterEvaluation(const SwitchContext& /*context*/,
                                               double /*accuracy*/) override {
    return std::nullopt;
  }
  void Switched(std::string_view /*now_running*/) override { ++next_; }

 private:
  std::vector<std::string> order_;
  int64_t every_;
  size_t next_ = 1;
  int64_t pushes_ = 0;
};

InnerPolicyMaker Maker() {
  return [](std::string_view name, int64_t n) -> Result<std::unique_ptr<Policy>> {
    bench::Experiment experiment;
    experiment.job.workers = n;
    experiment.job.batch = kBatch;
    Result<PolicyConfig> config = bench::PolicyFor(name, experiment);
    if (!config.ok()) return config.status();
    return MakePolicy(*config);
  };
}

// What a play saw.
struct AutoPlayed {
  std::vector<std::string> ran;  // the policies switched into, in order
  int64_t applies = 0;
};

// Plays sync-mode workers against `driven`'s SwitchingPolicy in virtual
// time until `until`, checking at every step what a switch promises: when
// it is done nothing is staged and no worker computes; the pulls it answers
// get one version; every update holds only pushes computed on a model of
// the policy running (base version at or after the switch); a batch an
// inner policy set is reset. A push's payload is its base version.
AutoPlayed Play(DrivenPolicy* driven, const std::vector<double>& step_s, double until) {
  const auto* policy = &driven->policy_as<SwitchingPolicy>();
  const int64_t n = driven->num_workers();
  VirtualTime time;
  std::vector<int64_t> clock(n, 0);
  std::vector<int64_t> base(n, 0);
  std::vector<bool> computing(n, false);
  std::vector<int64_t> batch(n, kBatch);
  std::vector<int64_t> staged;  // base versions of the pushes staged
  int64_t switched_at = 0;      // version when the running policy started
  AutoPlayed played;
  const auto play = [&](const Effects& effects) {
    std::optional<int64_t> released;
    for (const Effect& e : effects) {
      if (const auto* s = std::get_if<effect::Switched>(&e); s != nullptr && s->change.done) {
        for (WorkerId w = 0; w < n; ++w) CHECK_FALSE(computing[w]);
        CHECK(staged.empty());
        played.ran.push_back(s->change.to);
        switched_at = policy->version();
        released = policy->version();
      } else if (const auto* stage = std::get_if<effect::Staged>(&e)) {
        staged.push_back(stage->payload);
      } else if (std::holds_alternative<effect::Applied>(e)) {
        ++played.applies;
        for (const int64_t v : staged) CHECK(v >= switched_at);
        staged.clear();
      } else if (const auto* sent = std::get_if<effect::ModelSent>(&e)) {
        const WorkerId w = sent->worker;
        if (released) CHECK(sent->reply.version == *released);
        if (sent->reply.batch > 0) batch[w] = sent->reply.batch;
        base[w] = sent->reply.version;
        computing[w] = true;
        time.Start(w, step_s[w] * static_cast<double>(batch[w]) / kBatch);
      }
    }
  };
  play(driven->StartPulled());
  while (time.Due(until)) {
    const WorkerId w = time.Next();
    computing[w] = false;
    PushInfo push{clock[w], base[w], batch[w], true};
    push.batch = batch[w];
    push.busy_s = step_s[w] * static_cast<double>(batch[w]) / kBatch;
    push.cycle_s = push.busy_s;
    ++clock[w];
    driven->Push(w, push, push.base_version);
    driven->driver.Pull(w);
    play(driven->Take());
  }
  // Whatever ran last, every policy that runs in kSync mode had its batch back.
  if (policy->running() != "lbbsp") {
    for (WorkerId w = 0; w < n; ++w) CHECK(batch[w] == kBatch);
  }
  return played;
}

TEST_CASE("auto: a switch from and to every candidate leaves one model and no mixed update") {
  const std::vector<std::string> candidates = {"bsp", "backup:1", "ssp:3", "lbbsp", "dssp", "asp"};
  // Every ordered pair once: each candidate followed by each other.
  std::vector<std::string> order = {candidates.front()};
  for (const std::string& from : candidates) {
    for (const std::string& to : candidates) {
      if (from == to) continue;
      if (order.back() != from) order.push_back(from);
      order.push_back(to);
    }
  }
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    std::mt19937_64 rng(seed);
    const int64_t n = 3 + static_cast<int64_t>(seed % 3);
    const std::vector<double> step_s = RandomStepSeconds(rng, n);  // the last one 4x slower
    DrivenPolicy driven(std::make_unique<SwitchingPolicy>(
        n, std::make_unique<ScriptedDecider>(order, 3 * n), Maker(), kBatch));
    const AutoPlayed played = Play(&driven, step_s, 1000);
    CAPTURE(seed);
    REQUIRE(played.ran.size() == order.size() - 1);
    for (size_t i = 0; i + 1 < order.size(); ++i) CHECK(played.ran[i] == order[i + 1]);
    CHECK(played.applies > 0);
  }
}

TEST_CASE("auto: backup's round in progress is finished before a switch") {
  // Two of three workers pushed in a backup:1 round... worker 0 pushed and
  // waits, the others' pulls come during the drain: the round still needs
  // one of them, so one is given the model.
  SwitchingPolicy policy(
      3, std::make_unique<ScriptedDecider>(std::vector<std::string>{"backup:1", "bsp"}, 1), Maker(),
      kBatch);
  Actions actions;
  for (WorkerId w = 0; w < 3; ++w) policy.WorkerJoined(w, &actions);
  PullEach(&policy, 3);
  actions = PushActions(&policy, 0, {0, 0, kBatch, true});  // decides the switch
  REQUIRE(policy.switching());
  policy.PullRequested(0, &actions);
  CHECK(CountFor<ReplyModel>(actions, 0) == 0);
  // Worker 1 pushes: the round (two of three) closes; then all must wait.
  actions = PushActions(&policy, 1, {0, 0, kBatch, true});
  CHECK(Count<Apply>(actions) == 1);
  policy.PullRequested(1, &actions);
  CHECK(policy.running() == "backup:1");
  // Worker 2's push is late (computed on version 0) and dropped; then the switch.
  actions = PushActions(&policy, 2, {0, 0, kBatch, true});
  CHECK(Count<Drop>(actions) == 1);
  policy.PullRequested(2, &actions);
  CHECK(policy.running() == "bsp");
  CHECK(Count<ReplyModel>(actions) == 3);
}

TEST_CASE("auto: candidates it cannot switch into live are refused in one line") {
  PolicyConfig config;
  config.name = "auto";
  config.job.workers = 4;
  CHECK(autopolicy::MakePolicy(config).ok());
  for (const char* bad : {"wbsp", "abps", "token", "localsgd", "auto", "nope", "ssp:x"}) {
    config.candidates = {"bsp", bad};
    const auto made = autopolicy::MakePolicy(config);
    CAPTURE(bad);
    REQUIRE_FALSE(made.ok());
    CHECK(made.status().message().find('\n') == std::string::npos);
  }
  config.candidates = {"wbsp"};
  CHECK(autopolicy::MakePolicy(config).status().message().find("cannot switch into 'wbsp' live") !=
        std::string::npos);
  config.job.workers = 1;
  config.candidates = {};
  CHECK(autopolicy::MakePolicy(config).ok());  // backup:1 left out for one worker
}

TEST_CASE("auto: default candidates add the backup counts the job's table prices") {
  using List = std::vector<std::string>;
  const List base = {"backup:1", "bsp", "ssp:3", "lbbsp"};
  // mlp:128 at batch 256 was learned on 4 workers, backup:2 and backup:3 with rows of their own.
  // It names backup:2 as auto's start on that job: first.
  CHECK(AutoCandidates(4, TableFor("mlp:128", 256, 4)) ==
        List{"backup:2", "backup:1", "bsp", "backup:3", "ssp:3", "lbbsp"});
  CHECK(AutoCandidates(4, TableFor({}, 0, 4)) ==
        AutoCandidates(4, TableFor("mlp:128", 256, 4)));  // the default job's
  // Its table learned on 4 workers says nothing of backup:2 on 8.
  CHECK(AutoCandidates(8, TableFor("mlp:128", 256, 8)) == base);
  // The softmax tables have no row for backup:2: it is not a default there.
  CHECK(AutoCandidates(4, TableFor("softmax", 256, 4)) == base);
  CHECK(AutoCandidates(16, TableFor("softmax", 16, 16)) == base);
  CHECK(AutoCandidates(256, TableFor("softmax", 16, 256)) == base);
  CHECK(AutoCandidates(2, TableFor("mlp:128", 256, 2)) ==
        List{"bsp", "backup:1", "ssp:3", "lbbsp"});
  CHECK(AutoCandidates(1, TableFor("mlp:128", 256, 1)) == List{"bsp", "ssp:3", "lbbsp"});
  // Each default is one auto can switch into.
  for (const std::string& c : AutoCandidates(4, TableFor({}, 0, 4)))
    CHECK(CheckAutoCandidate(c, 4, 256).ok());
}

TEST_CASE("auto: a steady straggler moves it off bsp, an even cluster keeps it there") {
  const AutoRun slow = RunAuto(
      4, [](WorkerId w, int64_t) { return w == 3 ? 0.04 : 0.01; }, 20);
  REQUIRE_FALSE(slow.decisions.empty());
  CHECK(slow.decisions.front().running == "bsp");
  CHECK(slow.decisions.front().chosen != "bsp");
  CHECK(slow.decisions.front().predicted.size() == 4);
  CHECK(slow.decisions.front().measured.find("worker-3 steadily") != std::string::npos);
  CHECK(slow.running != "bsp");
  // What a decision costs (docs/advise.md, "Speed") is printed, not asserted:
  // a wall-clock bound fails on a loaded machine whatever the code does.
  double longest_ms = 0;
  for (const Decision& d : slow.decisions) longest_ms = std::max(longest_ms, d.decide_ms);
  MESSAGE("first decision: ", slow.decisions.front().reason, "; the longest of ",
          slow.decisions.size(), " took ", longest_ms, " ms");
  CHECK(longest_ms > 0);
  // No flapping: one switch (decided, done) under a steady straggler.
  CHECK(slow.switches.size() == 2);

  const AutoRun even = RunAuto(
      4, [](WorkerId w, int64_t) { return 0.01 + 0.0002 * static_cast<double>(w); }, 20);
  REQUIRE(even.decisions.size() > 3);
  for (const Decision& d : even.decisions) CHECK(d.chosen == "bsp");
  CHECK(even.switches.empty());
  CHECK(even.running == "bsp");
}

TEST_CASE("auto: predicting in the background, it chooses at a later boundary, as in the push") {
  // The server's way (PolicyConfig::decide_in_background): the push that
  // reads the workers goes on, and the first round boundary after the
  // predictions are in chooses; a steady straggler moves it off bsp once,
  // as when it decides within the push (above).
  const AutoRun slow = RunAuto(4, [](WorkerId w, int64_t) { return w == 3 ? 0.04 : 0.01; }, 20,
                               {.background = true});
  REQUIRE_FALSE(slow.decisions.empty());
  const Decision& first = slow.decisions.front();
  CHECK(first.running == "bsp");
  CHECK(first.chosen != "bsp");
  CHECK(first.predicted.size() == 4);
  CHECK(first.measured.find("worker-3 steadily") != std::string::npos);
  for (const Decision& d : slow.decisions) {
    // Each was read at a boundary before the one it chose at.
    int64_t read_at = -1;
    REQUIRE(std::sscanf(d.measured.c_str(), "at iteration %" SCNd64 ":", &read_at) == 1);
    CHECK(read_at < d.iteration);
    CHECK(d.decide_ms > 0);
  }
  CHECK(slow.switches.size() == 2);
  CHECK(slow.running == first.chosen);
}

TEST_CASE("auto: a prediction budget allows what its share of the time and allowance cover") {
  const PredictionBudget unbounded(0, 0);
  CHECK(unbounded.Allows(0));
  PredictionBudget budget(0.02, 100);
  CHECK(budget.Allows(0));
  budget.Spend(60);
  CHECK(budget.Allows(0));  // 60 of the allowance's 100
  budget.Spend(60);
  CHECK_FALSE(budget.Allows(0));
  CHECK_FALSE(budget.Allows(999));  // 120 > 100 + 19.98
  CHECK(budget.Allows(1000));
  CHECK(budget.spent_ms() == doctest::Approx(120));
}

TEST_CASE("auto: in the background its predictions keep to their share of the wall clock") {
  // Each step of four workers is held up 50x one time in five (the delay
  // profile's kind), which the background prices at advise's 300
  // simulated iterations a candidate, the first decision moving auto off
  // bsp; a decision is due at every round boundary. Those due beyond
  // AutoDecider::kPredictShare of the wall clock, after a first
  // kPredictAllowanceMs, wait: without that bound one would follow
  // another for as long as the run's pushes (0.2 ms each) take.
  const auto started = std::chrono::steady_clock::now();
  const AutoRun run = RunAuto(4, RandomDelays(0.5, 5), 80, {.background = true, .every = 1});
  const double wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  // How many decisions the budget lets through depends on how fast this
  // machine predicts (a sanitizer build on a loaded host may allow only the
  // first); auto_env_test.cc holds the count on a clock the test moves.
  REQUIRE_FALSE(run.decisions.empty());
  CHECK(run.decisions.front().chosen != "bsp");
  double before_last = 0;  // each started within the budget
  for (size_t i = 0; i + 1 < run.decisions.size(); ++i) before_last += run.decisions[i].decide_ms;
  CHECK(before_last <=
        AutoDecider::kPredictAllowanceMs + AutoDecider::kPredictShare * wall_ms + 1e-9);
  CHECK(run.decisions.back().measured.find("transient delays") != std::string::npos);
}

TEST_CASE("auto: from three workers it starts under backup:1 by default, and stays") {
  // Before its first decision auto runs uninformed, under backup:1, whose
  // rounds wait for no one slow worker (docs/auto.md). A
  // steady 4x straggler keeps it there; so does an even cluster, where BSP
  // is predicted faster but under AutoDecider::kIntoBsp times as fast.
  // (softmax's table names no start; the default job's does, below.)
  const auto straggler = [](WorkerId w, int64_t) { return w == 3 ? 0.04 : 0.01; };
  const AutoRun slow = RunAuto(4, straggler, 20, {.candidates = {}, .model = "softmax"});
  REQUIRE_FALSE(slow.decisions.empty());
  CHECK(slow.decisions.front().running == "backup:1");
  for (const Decision& d : slow.decisions) CHECK(d.chosen == "backup:1");
  CHECK(slow.switches.empty());
  const AutoRun even = RunAuto(4, [](WorkerId, int64_t) { return 0.01; }, 20,
                               {.candidates = {}, .model = "softmax"});
  REQUIRE(even.decisions.size() > 3);
  for (const Decision& d : even.decisions) {
    CHECK(d.running == "backup:1");
    CHECK(d.chosen == "backup:1");
  }
  CHECK(even.switches.empty());
  // Given candidates, it starts under the first; two workers and one,
  // under bsp (backup:1 would keep one push of two).
  const AutoRun from_lbbsp = RunAuto(4, [](WorkerId w, int64_t) { return w == 3 ? 0.04 : 0.01; },
                                     20, {.candidates = {"lbbsp", "bsp"}});
  REQUIRE_FALSE(from_lbbsp.decisions.empty());
  CHECK(from_lbbsp.decisions.front().running == "lbbsp");
  for (const int64_t n : {1, 2}) {
    const AutoRun few = RunAuto(n, [](WorkerId, int64_t) { return 0.01; }, 5, {.candidates = {}});
    REQUIRE_FALSE(few.decisions.empty());
    CHECK(few.decisions.front().running == "bsp");
  }
}

TEST_CASE("auto: where the job's table names a start, it starts there and leaves it once") {
  // The default job's table (mlp:128, batch 256, 4 workers) names
  // backup:2, where auto goes on that job from backup:1 (docs/auto.md,
  // "The start").
  CHECK(AutoCandidates(4, TableFor({}, 0, 4)).front() == "backup:2");
  const auto straggler = [](WorkerId w, int64_t) { return w == 3 ? 0.04 : 0.01; };
  const AutoRun slow = RunAuto(4, straggler, 20, {.candidates = {}});
  REQUIRE_FALSE(slow.decisions.empty());
  CHECK(slow.decisions.front().running == "backup:2");
  // Beside a steady straggler on cores of their own backup:1 needs fewer
  // iterations for rounds as long: one move there, and no return.
  REQUIRE(slow.switches.size() == 2);  // decided, done
  CHECK(slow.switches.front().to == "backup:1");
  CHECK(slow.running == "backup:1");
  // An even cluster keeps it: BSP is predicted faster, under kIntoBsp.
  const AutoRun even = RunAuto(4, [](WorkerId, int64_t) { return 0.01; }, 20, {.candidates = {}});
  REQUIRE(even.decisions.size() > 3);
  for (const Decision& d : even.decisions) CHECK(d.chosen == "backup:2");
  CHECK(even.switches.empty());
  // The table was learned on 4 workers: on 8 it names nothing.
  const AutoRun eight = RunAuto(8, straggler, 20, {.candidates = {}});
  REQUIRE_FALSE(eight.decisions.empty());
  CHECK(eight.decisions.front().running == "backup:1");
}

TEST_CASE("auto: into bsp from another candidate only when predicted kIntoBsp times as fast") {
  // An even cluster of the default job: backup:1 needs 1.15x BSP's
  // iterations for rounds a little shorter, so BSP is predicted faster,
  // but not kIntoBsp times: leaving backup:1 would give up what a
  // straggler coming later needs.
  const auto even = [](WorkerId, int64_t) { return 0.01; };
  const AutoRun kept = RunAuto(4, even, 20, {.candidates = {"backup:1", "bsp"}});
  REQUIRE_FALSE(kept.decisions.empty());
  const Decision& first = kept.decisions.front();
  CHECK(first.chosen == "backup:1");
  CHECK(first.reason.find("stay: bsp is predicted") != std::string::npos);
  CHECK(first.reason.find("waits for every push") != std::string::npos);
  CHECK(kept.switches.empty());
  // ssp:3 on that job needs some 14x BSP's iterations on an even cluster:
  // BSP is then predicted far past the bar, and the move is made.
  const AutoRun moved = RunAuto(4, even, 20, {.candidates = {"ssp:3", "bsp"}});
  REQUIRE_FALSE(moved.switches.empty());
  CHECK(moved.switches.front().from == "ssp:3");
  CHECK(moved.switches.front().to == "bsp");
  CHECK(moved.running == "bsp");
}

TEST_CASE("auto: a lasting slowdown mid-run calls for a decision at once") {
  // Worker 3 turns 4x slow at its step 150; the periodic decisions are 20
  // iterations apart, the one after the change comes within the change
  // window's steps.
  const AutoRun run = RunAuto(
      4, [](WorkerId w, int64_t step) { return w == 3 && step >= 150 ? 0.04 : 0.01; }, 10);
  REQUIRE_FALSE(run.switches.empty());
  CHECK(run.switches.front().from == "bsp");
  CHECK(run.switches.front().iteration >= 150);
  CHECK(run.switches.front().iteration <= 150 + 2 * predict::kChangeWindow);
}

TEST_CASE("auto: a link slowing down mid-run calls for a decision at once") {
  // Worker 3's pushes take 15 ms to send from its step 170, on steps of
  // 10 ms (the bandwidth profile's capped link): a lasting change as a
  // slower computing is one. The periodic decisions are at iterations 168
  // and 188; the one the change calls for comes within its window.
  const AutoRun run = RunAuto(
      4, [](WorkerId, int64_t) { return 0.01; }, 10,
      {.send_s = [](WorkerId w, int64_t step) { return w == 3 && step >= 170 ? 0.015 : 0; }});
  REQUIRE_FALSE(run.switches.empty());
  CHECK(run.switches.front().from == "bsp");
  CHECK(run.switches.front().iteration > 170);
  CHECK(run.switches.front().iteration <= 170 + predict::kChangeWindow);
  CHECK(run.switches.size() == 2);  // decided, done
}

TEST_CASE("auto: a straggler on the accuracy's plateau near the target still moves it") {
  // The accuracy sits at 0.845 for a target of 0.85 from iteration 20 on,
  // as it does for tens of iterations in real runs; worker 3 turns 4x slow
  // at its step 60. The progress alone says a fraction of an iteration is
  // left, where no switch pays; the decider counts at least the
  // iterations to its next periodic decision (docs/auto.md).
  const AutoRun run =
      RunAuto(4, [](WorkerId w, int64_t step) { return w == 3 && step >= 60 ? 0.04 : 0.01; }, 10,
              {.accuracy = [](int64_t iteration) { return iteration < 20 ? 0.1 : 0.845; }});
  REQUIRE_FALSE(run.switches.empty());
  CHECK(run.switches.front().from == "bsp");
  CHECK(run.switches.front().iteration >= 60);
}

TEST_CASE("auto: a straggler gone, it leaves backup:1 though the accuracy says little is left") {
  // The default job, where backup:1 needs 1.15x the iterations of BSP and
  // of LB-BSP (its efficiency table, learned from real runs). Started
  // under backup:1, worker 3 running 4x slow for its first 40 steps keeps
  // auto there, then as fast as the others: LB-BSP is then predicted
  // faster to the target (BSP, the faster still, is no candidate: leaving
  // backup:1 for it needs kIntoBsp). The accuracy climbs to 0.80 by
  // iteration 30 and then crawls, as it does on that job: extrapolated,
  // its progress says a few iterations are left, over which no switch
  // pays; counted over at least the iterations done so far, the move does.
  const auto accuracy = [](int64_t iteration) {
    return iteration < 30 ? 0.5 + 0.01 * static_cast<double>(iteration)
                          : 0.8 + 0.0001 * static_cast<double>(iteration - 30);
  };
  const auto step_s = [](WorkerId w, int64_t step) { return w == 3 && step < 12 ? 0.04 : 0.01; };
  // Two virtual seconds: some 150 iterations, all below the target.
  const AutoRun run =
      RunAuto(4, step_s, 2, {.accuracy = accuracy, .candidates = {"backup:1", "lbbsp", "ssp:3"}});
  REQUIRE_FALSE(run.decisions.empty());
  CHECK(run.decisions.front().running == "backup:1");
  CHECK(run.decisions.front().chosen == "backup:1");
  REQUIRE_FALSE(run.switches.empty());
  CHECK(run.switches.front().from == "backup:1");
  CHECK(run.switches.front().to == "lbbsp");
  CHECK(run.switches.front().iteration > 40);
  CHECK(run.running == "lbbsp");
  for (const Decision& d : run.decisions) {
    CHECK(d.remaining >= static_cast<double>(d.iteration) * 0.5);
  }
  // No flapping: the one switch, decided and done.
  CHECK(run.switches.size() == 2);
}

TEST_CASE("auto: near the target it does not switch into a policy that needs more iterations") {
  // 16 workers whose steps are held up 200 ms one time in five, at random:
  // BSP waits for a delayed worker nearly every round, ssp:3 lets the
  // others run on, and softmax's table at 16 workers has it at 1.25x BSP's
  // iterations under delays. With the accuracy a hair under the target,
  // what is left is a fraction of an iteration: entered there, SSP first
  // costs accuracy (docs/auto.md), so it stays. The delays
  // begin at step 20, once the accuracy says where the run is: the first
  // decision, at iteration 8, has only the first evaluation to go by.
  const auto delays = [](WorkerId w, int64_t step) {
    const uint64_t h = (static_cast<uint64_t>(w) * 0x9E3779B97F4A7C15ULL) ^
                       (static_cast<uint64_t>(step) * 0xC2B2AE3D27D4EB4FULL);
    return step >= 20 && (h >> 33) % 5 == 0 ? 0.21 : 0.01;
  };
  const std::vector<std::string> bsp_or_ssp = {"bsp", "ssp:3"};
  const AutoRun near =
      RunAuto(16, delays, 20,
              {.accuracy = [](int64_t iteration) { return iteration < 20 ? 0.1 : 0.849; },
               .candidates = bsp_or_ssp,
               .model = "softmax"});
  REQUIRE(near.decisions.size() > 2);
  CHECK(near.switches.empty());
  CHECK(near.running == "bsp");
  CHECK(near.decisions.back().measured.find("transient delays") != std::string::npos);
  // Far from the target the same cluster moves it.
  const AutoRun far =
      RunAuto(16, delays, 20,
              {.accuracy = [](int64_t iteration) { return iteration < 20 ? 0.1 : 0.3; },
               .candidates = bsp_or_ssp,
               .model = "softmax"});
  REQUIRE_FALSE(far.switches.empty());
  CHECK(far.switches.front().from == "bsp");
  CHECK(far.running == "ssp:3");
}

TEST_CASE("auto: a switch's bar: kMinGain, kIntoBsp into BSP, times kReturnBar each return") {
  const double gain = 1 / (1 - AutoDecider::kMinGain);
  CHECK(AutoSwitchBar("backup:1", "backup:2", 0) == doctest::Approx(gain));
  CHECK(AutoSwitchBar("backup:1", "bsp", 0) == doctest::Approx(AutoDecider::kIntoBsp));
  CHECK(AutoSwitchBar("bsp", "bsp", 0) == doctest::Approx(gain));
  CHECK(AutoSwitchBar("backup:2", "backup:1", 1) ==
        doctest::Approx(gain * AutoDecider::kReturnBar));
  CHECK(AutoSwitchBar("backup:1", "bsp", 1) ==
        doctest::Approx(AutoDecider::kIntoBsp * AutoDecider::kReturnBar));
  // The third return needs kReturnBar three times over.
  CHECK(AutoSwitchBar("backup:2", "backup:3", 3) ==
        doctest::Approx(gain * AutoDecider::kReturnBar * AutoDecider::kReturnBar *
                        AutoDecider::kReturnBar));
}

}  // namespace
}  // namespace dmlps::sync::testing
