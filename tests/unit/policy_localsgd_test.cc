// Local SGD as docs/algorithms-local-sgd.md states it ("Local SGD", "Asynchronous
// local SGD"): scripted event sequences, the outer optimizers' arithmetic,
// and workers played in virtual time, one of them 4x slower, with their H
// local steps as one piece of work per push.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "dmlps/optim/optimizer.h"
#include "dmlps/sync/localsgd.h"
#include "dmlps/sync/policy.h"
#include "driver_test_util.h"
#include "policy_test_util.h"

namespace dmlps::sync::testing {
namespace {

PolicyConfig LocalSgdConfig(int64_t n, int64_t local_steps = 4) {
  return {.name = "localsgd", .job = {.workers = n}, .local_steps = local_steps};
}

TEST_CASE("localsgd: Name, mode, the outer optimizer, and the settings MakePolicy refuses") {
  auto policy = MakeJoined(LocalSgdConfig(3));
  CHECK(policy->Name() == "localsgd");
  CHECK(policy->mode() == WorkerMode::kLocalSgd);
  CHECK(ParseWorkerMode("local-sgd").value() == WorkerMode::kLocalSgd);
  PolicyConfig config = LocalSgdConfig(3);
  CHECK(UsesOuterOptimizer(config));
  const ServerOptimizer outer = ServerOptimizerFor(config, 0.1, 0.5);
  CHECK(outer.lr == config.outer_lr);
  CHECK(outer.momentum == config.outer_momentum);
  CHECK(outer.nesterov);
  config.name = "bsp";
  CHECK_FALSE(UsesOuterOptimizer(config));
  CHECK(ServerOptimizerFor(config, 0.1, 0.5).lr == 0.1);
  CHECK_FALSE(ServerOptimizerFor(config, 0.1, 0.5).nesterov);

  PolicyConfig bad = LocalSgdConfig(3, 0);
  CHECK_FALSE(MakePolicy(bad).ok());
  bad = LocalSgdConfig(3);
  bad.outer_lr = 0;
  CHECK_FALSE(MakePolicy(bad).ok());
  bad = LocalSgdConfig(3);
  bad.outer_momentum = 1;
  CHECK_FALSE(MakePolicy(bad).ok());
}

TEST_CASE("localsgd: one outer step per round over every worker's pseudo-gradient") {
  auto policy = MakeJoined(LocalSgdConfig(3));
  CHECK(Count<ReplyModel>(PullEach(policy.get(), 3)) == 3);
  // Pseudo-gradients of H steps of 8 samples each: weighted by samples,
  // held until the last worker's arrives.
  Actions actions = PushEach(policy.get(), {0, 2}, {0, 0, 32, true});
  CHECK(Count<Stage>(actions) == 2);
  CHECK(Count<Apply>(actions) == 0);
  CHECK(Count<ApplyDelta>(actions) == 0);
  // A pull for the next round waits for the round to close.
  actions.clear();
  policy->PullRequested(0, &actions);
  CHECK(CountFor<Hold>(actions, 0) == 1);
  actions = PushActions(policy.get(), 1, {0, 0, 32, true});
  REQUIRE(Count<Apply>(actions) == 1);
  CHECK(Find<Apply>(actions)->scale == doctest::Approx(1.0 / 96));
  CHECK(Count<ApplyDelta>(actions) == 0);  // the outer optimizer takes it
  CHECK(CountFor<ReplyModel>(actions, 0) == 1);
  CHECK(policy->version() == 1);
  CHECK(policy->iteration() == 1);
  // A pseudo-gradient computed on the old model, or a second one in a round,
  // is refused.
  CHECK(OnlyDrop(PushActions(policy.get(), 2, {1, 0, 32, true})).reason.find("version") !=
        std::string::npos);
  PushActions(policy.get(), 0, {1, 1, 32, true});
  CHECK(OnlyDrop(PushActions(policy.get(), 0, {2, 1, 32, true})).reason.find("second push") !=
        std::string::npos);
}

TEST_CASE("localsgd: with H = 1, outer lr 1 and no outer momentum, a round is a BSP step") {
  // The server side: the same actions as BSP's for the same events.
  PolicyConfig config = LocalSgdConfig(3, 1);
  config.outer_lr = 1;
  config.outer_momentum = 0;
  auto local = MakeJoined(config);
  config.name = "bsp";
  auto bsp = MakeJoined(config);
  std::mt19937_64 rng(7);
  for (int round = 0; round < 20; ++round) {
    PullEach(local.get(), 3);
    PullEach(bsp.get(), 3);
    for (WorkerId w : {2, 0, 1}) {
      const PushInfo push{round, round, 8 + static_cast<int64_t>(rng() % 4), true};
      const Actions a = PushActions(local.get(), w, push);
      const Actions b = PushActions(bsp.get(), w, push);
      REQUIRE(a.size() == b.size());
      CHECK(Count<Apply>(a) == Count<Apply>(b));
      if (const Apply* apply = Find<Apply>(a)) CHECK(apply->scale == Find<Apply>(b)->scale);
    }
  }
  // The math: outer SGD of rate 1 on θ − (θ − lr g) is θ − lr g, BSP's step.
  // It is the default (docs/algorithms-local-sgd.md, "Local SGD": DiLoCo's Nesterov
  // 0.9 at rate 0.7 diverges on top of the inner momentum).
  const ServerOptimizer outer = ServerOptimizerFor(LocalSgdConfig(1), 0.1, 0.9);
  CHECK(outer.lr == 1);
  CHECK(outer.momentum == 0);
  auto sgd = optim::MakeOptimizer(1.0, 0.0, true, 3).value();
  std::vector<float> theta = {1.f, -2.f, 0.5f}, pseudo = {0.1f, -0.2f, 0.05f};
  sgd->Step(theta, pseudo, 1.f);
  CHECK(theta[0] == doctest::Approx(0.9f));
  CHECK(theta[1] == doctest::Approx(-1.8f));
}

TEST_CASE("localsgd: the outer Nesterov step is PyTorch's SGD(nesterov=True)") {
  auto nesterov = optim::MakeOptimizer(0.5, 0.9, true, 1).value();
  auto heavy = optim::MakeOptimizer(0.5, 0.9, false, 1).value();
  CHECK(nesterov->Name() == "nesterov");
  std::vector<float> a = {1.f}, b = {1.f};
  const std::vector<float> g = {0.2f};
  // Step 1: u = 0.2; θ -= 0.5 (0.2 + 0.9 · 0.2). Step 2: u = 0.38;
  // θ -= 0.5 (0.2 + 0.9 · 0.38).
  nesterov->Step(a, g, 1.f);
  CHECK(a[0] == doctest::Approx(1 - 0.5 * 0.38));
  nesterov->Step(a, g, 1.f);
  CHECK(a[0] == doctest::Approx(1 - 0.5 * 0.38 - 0.5 * (0.2 + 0.9 * 0.38)));
  CHECK(nesterov->StepStaysFinite(a, g, optim::StepInfo{1.f}, 0));
  heavy->Step(b, g, 1.f);
  CHECK(b[0] == doctest::Approx(0.9));
  const std::vector<float> huge = {3e38f};
  CHECK_FALSE(nesterov->StepStaysFinite(a, huge, optim::StepInfo{1.f}, 0));
}

// Plays n workers against localsgd in virtual time: each pulls, trains H
// local steps (one piece of work of H times its step time, with noise),
// pushes its pseudo-gradient with the next pull. Checks at every event the
// invariants of "Local SGD": every staged pseudo-gradient was computed on the
// version being updated, each update takes exactly one push per live worker
// of its round, and no worker starts round r + 1 before round r closed.
struct LocalSgdRun {
  int64_t rounds = 0;
  double seconds = 0;
  std::vector<double> waited;  // per worker: time between its push and its next model
};

LocalSgdRun PlayLocalSgd(const std::vector<double>& step_s, int64_t h, int64_t rounds,
                         uint64_t seed, double unusable_fraction = 0) {
  const auto n = static_cast<int64_t>(step_s.size());
  DrivenPolicy driven(LocalSgdConfig(n, h));
  const Policy& policy = driven.policy();
  driven.driver.Start();
  driven.Take();  // the first evaluation
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> noise(0.8, 1.2), coin(0, 1);
  VirtualTime time;
  LocalSgdRun run;
  run.waited.assign(static_cast<size_t>(n), 0);
  std::vector<int64_t> base(n, -1), clock(n, 0);
  std::vector<double> pushed_at(n, 0);
  std::vector<bool> staged_in_round(n, false);
  int64_t staged = 0, usable_in_round = 0;
  int64_t version = 0;  // as the applies seen so far count it
  const auto play = [&](const Effects& effects) {
    CheckPlainRoundEffects(effects);
    CHECK(Count<effect::Dropped>(effects) == 0);
    for (const Effect& e : effects) {
      if (const auto* stage = std::get_if<effect::Staged>(&e)) {
        CHECK_FALSE(staged_in_round[stage->worker]);  // one per worker per round
        staged_in_round[stage->worker] = true;
        ++staged;
      } else if (std::holds_alternative<effect::Applied>(e)) {
        CHECK(staged == usable_in_round);
        CHECK(staged > 0);
        staged = 0;
        usable_in_round = 0;
        staged_in_round.assign(static_cast<size_t>(n), false);
        ++version;
      } else if (const auto* sent = std::get_if<effect::ModelSent>(&e)) {
        const WorkerId w = sent->worker;
        REQUIRE(base[w] == -1);
        CHECK(clock[w] == policy.MinClock());  // round clock[w] is the one open
        CHECK(sent->reply.version == version);
        base[w] = version;
        run.waited[w] += time.now() - pushed_at[w];
        time.Start(w, static_cast<double>(h) * step_s[w] * noise(rng));
      }
    }
  };
  for (WorkerId w = 0; w < n; ++w) {
    driven.driver.Pull(w);
    play(driven.Take());
  }
  while (policy.iteration() < rounds) {
    REQUIRE_FALSE(time.empty());
    const WorkerId w = time.Next();
    const int64_t version_before = policy.version();
    CHECK(base[w] == version_before);  // a round's model is not changed under it
    PushInfo push{clock[w], base[w], 8 * h, coin(rng) >= unusable_fraction};
    if (push.usable) ++usable_in_round;
    ++clock[w];
    base[w] = -1;
    pushed_at[w] = time.now();
    driven.Push(w, push);
    driven.driver.Pull(w);
    play(driven.Take());
  }
  CHECK(version == policy.version());
  run.rounds = policy.iteration();
  run.seconds = time.now();
  return run;
}

TEST_CASE("localsgd driver: a 4x slower worker sets the pace; the others wait each round") {
  const std::vector<double> step_s = {0.01, 0.01, 0.01, 0.04};
  const int64_t h = 4;
  const LocalSgdRun run = PlayLocalSgd(step_s, h, 30, 1);
  CHECK(run.rounds == 30);
  // A round is about the straggler's H steps (within the noise).
  const double per_round = run.seconds / 30;
  CHECK(per_round >= 0.8 * h * 0.04);
  CHECK(per_round <= 1.2 * h * 0.04);
  // The fast workers wait about 3/4 of each round for it; it hardly waits.
  for (WorkerId w = 0; w < 3; ++w) CHECK(run.waited[w] > 0.5 * run.seconds);
  CHECK(run.waited[3] < 0.2 * run.seconds);
}

TEST_CASE("localsgd invariants under random speeds, noise and unusable pushes") {
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    std::mt19937_64 rng(seed);
    const int64_t n = 2 + static_cast<int64_t>(seed % 4);
    std::vector<double> step_s;
    for (int64_t w = 0; w < n; ++w) {
      step_s.push_back(std::uniform_real_distribution<double>(0.005, 0.02)(rng));
    }
    step_s.back() *= 4;  // one worker 4x slower
    const int64_t h = 1 + static_cast<int64_t>(seed % 5);
    const LocalSgdRun run = PlayLocalSgd(step_s, h, 25, seed, /*unusable_fraction=*/0.1);
    CHECK(run.rounds == 25);
  }
}

// ---------------------------------------------------------------- async-localsgd

PolicyConfig AsyncConfig(int64_t n, int64_t local_steps, bool dylu) {
  PolicyConfig config = LocalSgdConfig(n, local_steps);
  config.name = "async-localsgd";
  config.dylu = dylu;
  return config;
}

TEST_CASE("async-localsgd: Name, mode, the delayed outer momentum, and the settings refused") {
  auto policy = MakeJoined(AsyncConfig(4, 8, true));
  CHECK(policy->Name() == "async-localsgd");
  CHECK(policy->mode() == WorkerMode::kLocalSgd);
  PolicyConfig config = AsyncConfig(4, 8, false);
  CHECK(UsesOuterOptimizer(config));
  CHECK(ServerOptimizerFor(config, 0.1, 0).momentum_every == 4);  // N by default
  config.momentum_every = 7;
  CHECK(ServerOptimizerFor(config, 0.1, 0).momentum_every == 7);
  CHECK(ServerOptimizerFor(LocalSgdConfig(4), 0.1, 0).momentum_every == 1);
  config.momentum_every = -1;
  CHECK_FALSE(MakePolicy(config).ok());
  CHECK_FALSE(MakePolicy(AsyncConfig(4, 0, false)).ok());
}

TEST_CASE("async-localsgd: every push applied on arrival, scaled 1/N; no pull is held") {
  auto policy = MakeJoined(AsyncConfig(3, 4, false));
  CHECK(Count<ReplyModel>(PullEach(policy.get(), 3)) == 3);
  // Worker 1 pushes twice before the others push once; pseudo-gradients on
  // old versions count too.
  for (const auto& [w, clock, base] :
       std::vector<std::tuple<WorkerId, int64_t, int64_t>>{{1, 0, 0}, {1, 1, 1}, {0, 0, 0}}) {
    const int64_t before = policy->version();
    Actions actions = PushActions(policy.get(), w, {clock, base, 32, true});
    CHECK(CountFor<Stage>(actions, w) == 1);
    REQUIRE(Count<Apply>(actions) == 1);
    CHECK(Find<Apply>(actions)->scale == doctest::Approx(1.0 / 3));
    CHECK(policy->version() == before + 1);
    actions.clear();
    policy->PullRequested(w, &actions);
    CHECK(CountFor<ReplyModel>(actions, w) == 1);
    CHECK(Count<Hold>(actions) == 0);
    CHECK(Count<SetLocalSteps>(actions) == 0);  // no DyLU: H for all
  }
  // An unusable push changes nothing but counts.
  const Actions actions = PushActions(policy.get(), 2, {0, 0, 32, false});
  CHECK(Count<Apply>(actions) == 0);
  CHECK(policy->clock(2) == 1);
}

TEST_CASE("async-localsgd DyLU: local steps in proportion to speed, H for the fastest, >= 1") {
  auto policy = MakeJoined(AsyncConfig(4, 8, true));
  auto* async = dynamic_cast<AsyncLocalSgdPolicy*>(policy.get());
  REQUIRE(async != nullptr);
  PullEach(policy.get(), 4);
  // Nothing measured yet: everyone takes H.
  for (WorkerId w = 0; w < 4; ++w) CHECK(async->local_steps(w) == 8);
  // 8 steps of 8 samples: 1 s for workers 0 and 1, 2 s for 2, 4 s for 3.
  const double busy[] = {1, 1, 2, 4};
  for (WorkerId w = 0; w < 4; ++w) {
    PushInfo push{0, 0, 64, true};
    push.busy_s = busy[w];
    Actions actions = PushActions(policy.get(), w, push);
    policy->PullRequested(w, &actions);
    // The reply carries the step count, before the model.
    REQUIRE(CountFor<SetLocalSteps>(actions, w) == 1);
    CHECK(IndexOf<SetLocalSteps>(actions, w) < IndexOf<ReplyModel>(actions, w));
  }
  CHECK(async->local_steps(0) == 8);
  CHECK(async->local_steps(1) == 8);
  CHECK(async->local_steps(2) == 4);
  CHECK(async->local_steps(3) == 2);  // a quarter of the speed, a quarter of H
  // Worker 3 now takes 2 steps of 8 samples in 0.25 s: as fast as the others.
  PushInfo push{1, 4, 16, true};
  push.busy_s = 0.25;
  Actions actions = PushActions(policy.get(), 3, push);
  policy->PullRequested(3, &actions);
  CHECK(async->local_steps(3) == 8);
  // A worker 100x slower still takes one step; a gone fastest no longer counts.
  push = {1, 5, 64, true};
  push.busy_s = 100;
  PushActions(policy.get(), 2, push);
  CHECK(async->local_steps(2) == 1);
  actions.clear();
  for (WorkerId w : {0, 1, 3}) policy->WorkerLeft(w, &actions);
  CHECK(async->local_steps(2) == 8);
}

// Plays n workers against async-localsgd in virtual time: each takes the
// local steps its last reply set, at its step time, pushes, and goes on at
// once with the model the reply brings. Checks every event: nothing is ever
// held, every usable push is applied once, scaled 1/N, and the local steps
// stay in [1, H]. Returns each worker's pushes and local steps.
struct AsyncRun {
  std::vector<int64_t> pushes;
  std::vector<int64_t> steps;
  std::vector<int64_t> last_local_steps;
};

AsyncRun PlayAsync(const std::vector<double>& step_s, int64_t h, bool dylu, double until,
                   uint64_t seed) {
  const auto n = static_cast<int64_t>(step_s.size());
  DrivenPolicy driven(AsyncConfig(n, h, dylu));
  driven.driver.Start();
  driven.Take();  // the first evaluation
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> noise(0.9, 1.1), coin(0, 1);
  VirtualTime time;
  AsyncRun run{std::vector<int64_t>(n, 0), std::vector<int64_t>(n, 0), std::vector<int64_t>(n, h)};
  std::vector<int64_t> base(n, 0), clock(n, 0), next_steps(n, h);
  // Worker w pulls: answered at once, never held, with the local steps it
  // takes next when they change.
  const auto pull = [&](WorkerId w) {
    driven.driver.Pull(w);
    const Effects pulled = driven.Take();
    REQUIRE(pulled.size() == 1);
    const auto* sent = std::get_if<effect::ModelSent>(&pulled[0]);
    REQUIRE(sent != nullptr);
    REQUIRE(sent->worker == w);
    const int64_t steps = sent->reply.local_steps;
    if (steps != 0) {
      CHECK(steps >= 1);
      CHECK(steps <= h);
      next_steps[w] = steps;
    }
    base[w] = sent->reply.version;
    run.last_local_steps[w] = next_steps[w];
    time.Start(w, static_cast<double>(next_steps[w]) * step_s[w] * noise(rng));
  };
  for (WorkerId w = 0; w < n; ++w) pull(w);
  while (time.Due(until)) {
    const WorkerId w = time.Next();
    const int64_t steps = run.last_local_steps[w];
    PushInfo push{clock[w], base[w], 8 * steps, coin(rng) >= 0.05};
    push.busy_s = static_cast<double>(steps) * step_s[w];
    ++clock[w];
    ++run.pushes[w];
    run.steps[w] += steps;
    driven.Push(w, push);
    const Effects pushed = driven.Take();
    CHECK(Count<effect::Dropped>(pushed) == 0);
    CHECK(Count<effect::ModelSent>(pushed) == 0);
    const std::vector<effect::Applied> applied = All<effect::Applied>(pushed);
    REQUIRE(applied.size() == (push.usable ? 1U : 0U));
    for (const effect::Applied& apply : applied) {
      CHECK(apply.with_optimizer);
      CHECK(apply.scale == doctest::Approx(1.0 / static_cast<double>(n)));
    }
    pull(w);
  }
  return run;
}

TEST_CASE("async-localsgd driver: fast workers never wait for a 4x slower one") {
  const std::vector<double> step_s = {0.01, 0.01, 0.01, 0.04};
  const AsyncRun run = PlayAsync(step_s, 8, /*dylu=*/false, 20, 3);
  // Without DyLU everyone takes H steps: the fast ones push about 4x as often.
  for (WorkerId w = 0; w < 3; ++w) {
    CHECK(run.pushes[w] >= 3.5 * static_cast<double>(run.pushes[3]));
    CHECK(run.pushes[w] <= 4.5 * static_cast<double>(run.pushes[3]));
    CHECK(run.last_local_steps[w] == 8);
  }
}

TEST_CASE(
    "async-localsgd driver with DyLU: the 4x slower worker takes H/4 steps, pushes as often") {
  const std::vector<double> step_s = {0.01, 0.01, 0.01, 0.04};
  const AsyncRun run = PlayAsync(step_s, 8, /*dylu=*/true, 20, 4);
  CHECK(run.last_local_steps[3] == 2);
  for (WorkerId w = 0; w < 3; ++w) CHECK(run.last_local_steps[w] == 8);
  // Equal push rates, so their pseudo-gradients are about equally stale.
  for (WorkerId w = 0; w < 3; ++w) {
    CHECK(static_cast<double>(run.pushes[3]) >= 0.8 * static_cast<double>(run.pushes[w]));
  }
}

TEST_CASE("async-localsgd invariants under random speeds and noise, with and without DyLU") {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    std::mt19937_64 rng(seed);
    const int64_t n = 2 + static_cast<int64_t>(seed % 4);
    const std::vector<double> step_s = RandomStepSeconds(rng, n);
    const AsyncRun run =
        PlayAsync(step_s, 1 + static_cast<int64_t>(seed % 8), seed % 2 == 0, 5, seed);
    for (WorkerId w = 0; w < n; ++w) CHECK(run.pushes[w] > 0);
  }
}

TEST_CASE("delayed Nesterov: N plain steps, then the momentum: one Nesterov step on their mean") {
  // docs/algorithms-local-sgd.md, "Asynchronous local SGD".
  const int64_t n = 3;
  auto delayed = optim::MakeOptimizer(0.5, 0.9, true, n, 2).value();
  auto nesterov = optim::MakeOptimizer(0.5, 0.9, true, 1, 2).value();
  CHECK(delayed->Name() == "delayed-nesterov");
  std::vector<float> a = {1.f, -1.f}, b = a;
  const std::vector<std::vector<float>> pushes = {{0.3f, 0.1f}, {0.6f, -0.2f}, {0.0f, 0.4f},
                                                  {0.2f, 0.2f}, {-0.4f, 0.1f}, {0.5f, 0.0f}};
  for (size_t cycle = 0; cycle < 2; ++cycle) {
    std::vector<float> mean = {0, 0};
    std::vector<float> plain = a;
    for (size_t k = 0; k < static_cast<size_t>(n); ++k) {
      const std::vector<float>& g = pushes[cycle * n + k];
      for (size_t i = 0; i < 2; ++i) mean[i] += g[i] / static_cast<float>(n);
      delayed->Step(a, g, 1.f / static_cast<float>(n));
      if (k + 1 < static_cast<size_t>(n)) {
        // In between: a plain step of the push scaled by the outer lr and 1/N.
        for (size_t i = 0; i < 2; ++i) plain[i] -= 0.5f * g[i] / static_cast<float>(n);
        CHECK(a[0] == doctest::Approx(plain[0]));
        CHECK(a[1] == doctest::Approx(plain[1]));
      }
    }
    nesterov->Step(b, mean, 1.f);
    CHECK(a[0] == doctest::Approx(b[0]));
    CHECK(a[1] == doctest::Approx(b[1]));
  }
  // Its state goes through a checkpoint between cycles: a copy goes on as
  // the original.
  auto copy = optim::MakeOptimizer(0.5, 0.9, true, n, 2).value();
  REQUIRE(copy->SetState(delayed->State()).ok());
  std::vector<float> c = a;
  for (size_t k = 0; k < 4; ++k) {
    delayed->Step(a, pushes[k], 0.5f);
    copy->Step(c, pushes[k], 0.5f);
  }
  CHECK(a == c);
  CHECK_FALSE(copy->SetState(std::vector<float>(5, 0.f)).ok());
  const std::vector<float> huge = {3.4e38f, 3.4e38f};
  CHECK_FALSE(delayed->StepStaysFinite(a, huge, optim::StepInfo{4.f}, 0));
}

}  // namespace
}  // namespace dmlps::sync::testing
