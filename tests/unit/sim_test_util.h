// Data the simulator's tests train on, and the jobs they simulate.
#ifndef DMLPS_TESTS_UNIT_SIM_TEST_UTIL_H_
#define DMLPS_TESTS_UNIT_SIM_TEST_UTIL_H_

#include <cstdint>
#include <random>
#include <string>

#include "dmlps/data/dataset.h"
#include "dmlps/model/model.h"
#include "dmlps/sim/sim.h"

namespace dmlps::sim {

// Two classes split by x0 + x1 > 1 over the unit square: softmax learns it.
inline data::Dataset Separable(int64_t rows, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0, 1);
  data::Dataset d;
  d.dim = 4;
  d.classes = 2;
  for (int64_t i = 0; i < rows; ++i) {
    float x[4] = {u(rng), u(rng), u(rng), u(rng)};
    d.dense.insert(d.dense.end(), x, x + 4);
    d.labels.push_back(x[0] + x[1] > 1 ? 1 : 0);
  }
  return d;
}

// A simulated job of n workers under `policy`, each `batch` samples a step,
// training `model_name` on data of `dim` features and `classes` classes;
// every other setting SimConfig's default.
inline SimConfig SimJob(const std::string& policy, int64_t n, int64_t batch,
                        const std::string& model_name = "softmax", int64_t dim = 4,
                        int64_t classes = 2) {
  SimConfig c;
  c.policy.name = policy;
  c.job.workers = n;
  c.job.batch = batch;
  c.model = *model::ParseModelSpec(model_name, dim, classes);
  return c;
}

// In `c` only steps and latency cost time: a step `fixed_s` plus `sample_s`
// a sample, each message `latency_s` on links of unlimited bandwidth,
// nothing per parameter or per message.
inline void OnlyStepsAndLatency(double fixed_s, double sample_s, double latency_s, SimConfig* c) {
  c->cost = CostModel::Linear(fixed_s, sample_s);
  c->cost.param_s = 0;
  c->cost.message_s = 0;
  c->network.link_gbps = 0;
  c->network.latency_s = latency_s;
}

}  // namespace dmlps::sim

#endif  // DMLPS_TESTS_UNIT_SIM_TEST_UTIL_H_
