// FedAvg as docs/algorithms-local-sgd.md states it ("FedAvg"): local SGD whose round
// replaces the model by the mean of the workers' copies, its outer
// optimizer fixed at plain averaging.
#include <doctest/doctest.h>

#include <string>

#include "dmlps/sync/fedavg.h"
#include "dmlps/sync/registry.h"
#include "policy_test_util.h"

namespace dmlps::sync::testing {
namespace {

PolicyConfig FedAvgConfig(int64_t n, int64_t local_steps = 4) {
  PolicyConfig config;
  REQUIRE(ApplyEntry("fedavg:" + std::to_string(local_steps), &config).ok());
  config.job.workers = n;
  return config;
}

TEST_CASE("fedavg: localsgd's rounds, the model the mean of the workers' copies") {
  const PolicyConfig config = FedAvgConfig(2);
  CHECK(config.name == "fedavg");
  CHECK(config.local_steps == 4);
  auto policy = MakeJoined(config);
  CHECK(policy->Name() == "fedavg");
  CHECK(policy->mode() == WorkerMode::kLocalSgd);
  // Steps of learning rate 1 without momentum along the mean
  // pseudo-gradient: theta - mean(theta - theta_i) = mean(theta_i).
  CHECK(UsesOuterOptimizer(config));
  const ServerOptimizer outer = ServerOptimizerFor(config, 0.1, 0.9);
  CHECK(outer.lr == 1);
  CHECK(outer.momentum == 0);
  CHECK(outer.momentum_every == 1);
  // One step per round, over both workers' pushes weighted by samples.
  CHECK(Count<ReplyModel>(PullEach(policy.get(), 2)) == 2);
  Actions actions = PushActions(policy.get(), 0, {0, 0, 32, true});
  CHECK(Count<Stage>(actions) == 1);
  CHECK(Count<Apply>(actions) == 0);
  actions = PushActions(policy.get(), 1, {0, 0, 16, true});
  REQUIRE(Count<Apply>(actions) == 1);
  CHECK(Find<Apply>(actions)->scale == doctest::Approx(1.0 / 48));
  CHECK(policy->version() == 1);
}

TEST_CASE("fedavg: no outer optimizer but averaging, and at least one local step") {
  PolicyConfig config = FedAvgConfig(2);
  CHECK(CheckPolicy(config).ok());
  config.outer_lr = 0.7;
  CHECK(CheckPolicy(config).message().find("fedavg averages the workers' models") !=
        std::string::npos);
  config = FedAvgConfig(2);
  config.outer_momentum = 0.9;
  CHECK_FALSE(MakePolicy(config).ok());
  CHECK_FALSE(MakePolicy(FedAvgConfig(2, 0)).ok());
  // dmlps-server refuses the outer optimizer's flags for it.
  CHECK(MisplacedFlag("outer-lr", "fedavg") ==
        "--outer-lr applies only to --policy localsgd or async-localsgd");
  CHECK(MisplacedFlag("local-steps", "fedavg").empty());
  PolicyConfig parsed;
  CHECK(ApplyEntry("fedavg:x", &parsed).message() == "fedavg:H needs a number H");
}

}  // namespace
}  // namespace dmlps::sync::testing
