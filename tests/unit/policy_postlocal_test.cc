// Post-local SGD as docs/algorithms-local-sgd.md states it ("Post-local
// SGD"): rounds of one local step, mini-batch SGD, until the switch point,
// then rounds of H; every model the server sends says which, and the model
// is the mean of the workers' copies throughout.
#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

#include "dmlps/sim/sim.h"
#include "dmlps/sync/postlocal.h"
#include "dmlps/sync/registry.h"
#include "policy_test_util.h"

namespace dmlps::sync::testing {
namespace {

PolicyConfig PostLocalConfig(std::string_view entry, int64_t max_iterations, double target = 0) {
  PolicyConfig config;
  config.job.workers = 2;
  config.job.batch = 8;
  config.job.max_iterations = max_iterations;
  config.job.target_accuracy = target;
  REQUIRE(ApplyEntry(entry, &config).ok());
  REQUIRE(CheckPolicy(config).ok());
  return config;
}

// One round of both workers: their pulls, answered at once, then their
// pushes of `samples` each, which close it. Returns the local steps the
// round's models set, the same for both; every action into *all.
int64_t PlayRound(Policy* policy, int64_t samples, Actions* all) {
  const int64_t round = policy->iteration();
  const Actions replies = PullEach(policy, 2);
  REQUIRE(Count<ReplyModel>(replies) == 2);
  REQUIRE(Count<SetLocalSteps>(replies) == 2);
  for (WorkerId w = 0; w < 2; ++w) {
    // The steps go out before the model they apply to.
    CHECK(IndexOf<SetLocalSteps>(replies, w) < IndexOf<ReplyModel>(replies, w));
  }
  const int64_t steps = Find<SetLocalSteps>(replies, 0)->steps;
  CHECK(Find<SetLocalSteps>(replies, 1)->steps == steps);
  const Actions pushes = PushEach(policy, {0, 1}, {round, round, samples * steps, true});
  CHECK(Count<Apply>(pushes) == 1);
  CHECK(policy->iteration() == round + 1);
  all->insert(all->end(), replies.begin(), replies.end());
  all->insert(all->end(), pushes.begin(), pushes.end());
  return steps;
}

TEST_CASE("post-localsgd: rounds of one local step, then of H once the run is that far") {
  const PolicyConfig config = PostLocalConfig("post-localsgd:4:0.5", 10);
  CHECK(config.name == "post-localsgd");
  CHECK(config.local_steps == 4);
  CHECK(config.switch_at == 0.5);
  auto policy = MakeJoined(config);
  CHECK(policy->Name() == "post-localsgd");
  CHECK(policy->mode() == WorkerMode::kLocalSgd);
  // The server averages the copies: an outer SGD of learning rate 1, no momentum.
  const ServerOptimizer outer = ServerOptimizerFor(config, 0.1, 0.9);
  CHECK(outer.lr == 1);
  CHECK(outer.momentum == 0);
  Actions all;
  std::vector<int64_t> steps;
  for (int i = 0; i < 10; ++i) steps.push_back(PlayRound(policy.get(), 8, &all));
  // ceil(0.5 * 10) = 5 rounds of mini-batch SGD, the other 5 of H = 4 steps.
  CHECK(steps == std::vector<int64_t>{1, 1, 1, 1, 1, 4, 4, 4, 4, 4});
  REQUIRE(Count<Switch>(all) == 1);
  const Switch& change = *Find<Switch>(all);
  CHECK(change.from == "localsgd:1");
  CHECK(change.to == "localsgd:4");
  CHECK(change.iteration == 5);
  CHECK(change.why == "iterations done");
  CHECK(change.done);
}

TEST_CASE("post-localsgd: with a target, by the accuracy's progress toward it") {
  auto policy = MakeJoined(PostLocalConfig("post-localsgd:8:0.5", 0, 0.9));
  Actions all;
  Actions seen;
  policy->EvaluationSeen(0.1, &seen);  // the start of the progress
  CHECK(PlayRound(policy.get(), 8, &all) == 1);
  policy->EvaluationSeen(0.45, &seen);  // 0.35 / 0.8 of the way
  CHECK(PlayRound(policy.get(), 8, &all) == 1);
  CHECK(Count<Switch>(seen) == 0);
  policy->EvaluationSeen(0.55, &seen);  // 0.45 / 0.8 >= 0.5
  REQUIRE(Count<Switch>(seen) == 1);
  CHECK(Find<Switch>(seen)->why == "accuracy progress");
  CHECK(Find<Switch>(seen)->iteration == 2);
  CHECK(PlayRound(policy.get(), 8, &all) == 8);
  // Once: a later evaluation, better or worse, changes nothing.
  policy->EvaluationSeen(0.3, &seen);
  policy->EvaluationSeen(0.9, &seen);
  CHECK(Count<Switch>(seen) == 1);
  CHECK(PlayRound(policy.get(), 8, &all) == 8);
  CHECK(Count<Switch>(all) == 0);
}

TEST_CASE("post-localsgd: a run resumed from a checkpoint goes on in its phase") {
  // The switch comes as round 2 closes: ceil(0.25 * 8) = 2.
  const PolicyConfig config = PostLocalConfig("post-localsgd:3:0.25", 8);
  auto policy = MakeJoined(config);
  Actions all;
  CHECK(PlayRound(policy.get(), 8, &all) == 1);
  const PolicyState mini_batch = policy->Save();
  CHECK(PlayRound(policy.get(), 8, &all) == 1);
  const PolicyState local = policy->Save();
  CHECK(PlayRound(policy.get(), 8, &all) == 3);
  // Resumed, each goes on as it would have.
  for (const PolicyState& state : {mini_batch, local}) {
    CAPTURE(state.iteration);
    Result<std::unique_ptr<Policy>> resumed = MakePolicy(config);
    REQUIRE(resumed.ok());
    (*resumed)->Restore(state);
    Actions ignored;
    for (WorkerId w = 0; w < 2; ++w) (*resumed)->WorkerJoined(w, &ignored);
    std::vector<int64_t> steps;
    for (int i = 0; i < 2; ++i) steps.push_back(PlayRound(resumed->get(), 8, &all));
    CHECK(steps ==
          (state.iteration == 1 ? std::vector<int64_t>{1, 3} : std::vector<int64_t>{3, 3}));
  }
}

TEST_CASE("post-localsgd: its entry, its flags and the settings it refuses") {
  PolicyConfig config;
  REQUIRE(ApplyEntry("post-localsgd", &config).ok());
  CHECK(config.local_steps == PolicyConfig{}.local_steps);
  CHECK(config.switch_at == PolicyConfig{}.switch_at);
  REQUIRE(ApplyEntry("post-localsgd:16", &config).ok());
  CHECK(config.local_steps == 16);
  constexpr std::string_view kNeeds =
      "post-localsgd:H[:FRACTION] needs a whole number H and a FRACTION in [0, 1]";
  CHECK(ApplyEntry("post-localsgd:x", &config).message() == kNeeds);
  CHECK(ApplyEntry("post-localsgd:4:", &config).message() == kNeeds);
  CHECK(ApplyEntry("post-localsgd:4:0.5x", &config).message() == kNeeds);

  config = PostLocalConfig("post-localsgd:4:0.5", 10);
  config.switch_at = 1.5;
  CHECK(CheckPolicy(config).message() == "post-localsgd needs --switch-at in [0, 1]");
  config = PostLocalConfig("post-localsgd:4:0.5", 10);
  config.local_steps = 0;
  CHECK(CheckPolicy(config).message() == "post-localsgd needs at least 1 local step");
  config = PostLocalConfig("post-localsgd:4:0.5", 10);
  config.job.max_iterations = 0;
  CHECK(CheckPolicy(config).message().find("give --target-accuracy or --max-iterations") !=
        std::string::npos);
  config = PostLocalConfig("post-localsgd:4:0.5", 10);
  config.outer_momentum = 0.9;
  CHECK(CheckPolicy(config).message().find("post-localsgd averages the workers' models") !=
        std::string::npos);
  // dmlps-server takes --local-steps and --switch-at for it, and no other
  // policy flag.
  CHECK(MisplacedFlag("local-steps", "post-localsgd").empty());
  CHECK(MisplacedFlag("switch-at", "post-localsgd").empty());
  CHECK(MisplacedFlag("switch-online", "post-localsgd") ==
        "--switch-online applies only to --policy sync-switch");
  CHECK_FALSE(MisplacedFlag("outer-lr", "post-localsgd").empty());
  // --switch-at 0: local rounds from the first.
  auto policy = MakeJoined(PostLocalConfig("post-localsgd:4:0", 10));
  Actions all;
  CHECK(PlayRound(policy.get(), 8, &all) == 4);
}

TEST_CASE("post-localsgd: the simulator's workers take one step a round, then H") {
  sim::SimConfig c;
  c.policy = PostLocalConfig("post-localsgd:4:0.5", 20);
  c.job = c.policy.job;
  c.job.eval_every = 10;
  c.stragglers.assign(2, {});
  c.cost = sim::CostModel::Linear(1e-3, 0);
  Result<sim::SimReport> report = sim::SimulateTiming(c, 100);
  REQUIRE(report.ok());
  CHECK(report->failure.empty());
  CHECK(report->iterations == 20);
  for (const sim::WorkerStats& w : report->workers) {
    CHECK(w.steps == 20);  // one push a round
    CHECK(w.samples == 8 * (10 * 1 + 10 * 4));
  }
  REQUIRE(report->switches.size() == 1);
  CHECK(report->switches[0].change.iteration == 10);
}

}  // namespace
}  // namespace dmlps::sync::testing
