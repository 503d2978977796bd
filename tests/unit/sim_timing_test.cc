// The simulator on timing alone (sim::SimulateTiming): a real model's run
// and its timing-only twin on a stand-in model take the same virtual time,
// since time comes from the cost model and messages and passes over the
// parameters weigh as the real model's.
#include <doctest/doctest.h>

#include <chrono>

#include "dmlps/data/dataset.h"
#include "dmlps/model/model.h"
#include "dmlps/sim/sim.h"
#include "sim_test_util.h"

namespace dmlps::sim {
namespace {

// A real model's run and its timing-only twin take the same virtual time:
// time comes from the cost model, messages and passes weigh as the model's.
TEST_CASE("sim: a timing-only simulation times a run as the full one does") {
  data::Dataset train, test;
  train.dim = test.dim = 8;
  train.classes = test.classes = 3;
  for (int64_t i = 0; i < 256; ++i) {
    for (int64_t j = 0; j < 8; ++j) train.dense.push_back(static_cast<float>((i * 7 + j) % 5));
    train.labels.push_back(static_cast<int32_t>(i % 3));
  }
  test.dense.assign(train.dense.begin(), train.dense.begin() + 64 * 8);
  test.labels.assign(train.labels.begin(), train.labels.begin() + 64);
  for (const char* policy : {"bsp", "abps", "wbsp", "ssp", "lbbsp", "asp", "backup", "localsgd"}) {
    CAPTURE(policy);
    SimConfig c = SimJob(policy, 4, 16, "mlp:32", 8, 3);
    c.policy.chunk = 4;
    c.job.max_iterations = 40;
    c.job.eval_every = 20;
    for (double k : {1.0, 1.0, 1.0, 3.0}) {
      worker::StragglerSpec spec;
      spec.slowdown = k;
      spec.delay_prob = 0.1;
      spec.delay = std::chrono::milliseconds(5);
      c.stragglers.push_back(spec);
    }
    c.noise.assign(4, {0.2, 0});
    c.cost = CostModel::Linear(1e-3, 1e-4);
    c.cost.param_s = 1e-8;
    c.network = {1, 100e-6, false};
    Result<SimReport> full = Simulate(c, train, test);
    Result<SimReport> timing = SimulateTiming(c, c.model.NumParams());
    REQUIRE(full.ok());
    REQUIRE(timing.ok());
    CHECK(timing->failure.empty());
    CHECK(timing->iterations == full->iterations);
    CHECK(timing->seconds == doctest::Approx(full->seconds).epsilon(1e-9));
    CHECK(timing->compute_ratio_mean == doctest::Approx(full->compute_ratio_mean));
  }
  CHECK(SimulateTiming(SimConfig{}, 0).status().code() == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dmlps::sim
