// Data the simulator's tests train on.
#ifndef DMLPS_TESTS_UNIT_SIM_TEST_UTIL_H_
#define DMLPS_TESTS_UNIT_SIM_TEST_UTIL_H_

#include <cstdint>
#include <random>

#include "dmlps/data/dataset.h"

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

}  // namespace dmlps::sim

#endif  // DMLPS_TESTS_UNIT_SIM_TEST_UTIL_H_
