// Model specs and random inputs and labels, for the tests of the models.
#ifndef DMLPS_TESTS_UNIT_MODEL_TEST_UTIL_H_
#define DMLPS_TESTS_UNIT_MODEL_TEST_UTIL_H_

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string_view>
#include <type_traits>
#include <vector>

#include "dmlps/data/dataset.h"
#include "dmlps/model/model.h"

namespace dmlps::model::testing {

// The spec `text` names; fails the test when it does not parse.
inline ModelSpec MustParse(std::string_view text, int64_t input_dim, int64_t classes) {
  Result<ModelSpec> spec = ParseModelSpec(text, input_dim, classes);
  REQUIRE_MESSAGE(spec.ok(), spec.status().message());
  return *spec;
}

// n values of type T drawn uniformly from [-scale, scale].
template <typename T>
std::vector<T> RandomVector(int64_t n, std::type_identity_t<T> scale, std::mt19937_64& rng) {
  std::uniform_real_distribution<T> dist(-scale, scale);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& e : v) e = dist(rng);
  return v;
}

// n labels drawn uniformly from [0, classes).
inline std::vector<int32_t> RandomLabels(int64_t n, int64_t classes, std::mt19937_64& rng) {
  std::uniform_int_distribution<int32_t> dist(0, static_cast<int32_t>(classes - 1));
  std::vector<int32_t> y(static_cast<size_t>(n));
  for (int32_t& label : y) label = dist(rng);
  return y;
}

// A dense data set of `rows` random rows of `dim` features in [-1, 1] and
// random labels of `classes` classes.
inline data::Dataset RandomDataset(int64_t rows, int64_t dim, int64_t classes,
                                   std::mt19937_64& rng) {
  data::Dataset data;
  data.dim = dim;
  data.classes = classes;
  data.dense = RandomVector<float>(rows * dim, 1.f, rng);
  data.labels = RandomLabels(rows, classes, rng);
  return data;
}

}  // namespace dmlps::model::testing

#endif  // DMLPS_TESTS_UNIT_MODEL_TEST_UTIL_H_
