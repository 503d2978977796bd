// The simulator's push gradients: computed ahead on helper threads or when
// taken, they are the gradients a worker computes alone, whatever the number
// of threads and the order in which the server takes them.
#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "model_test_util.h"
#include "sim/gradients.h"

namespace dmlps::sim {
namespace {

using model::testing::MustParse;
using model::testing::RandomDataset;
using model::testing::RandomVector;

constexpr int64_t kDim = 12;
constexpr int64_t kClasses = 3;
constexpr int64_t kRows = 40;

// Random data drawn from `seed`, a model of `name` on them, and the
// generator to draw models and samples from next.
struct GradientJob {
  GradientJob(uint64_t seed, const std::string& name)
      : rng(seed),
        data(RandomDataset(kRows, kDim, kClasses, rng)),
        spec(MustParse(name, kDim, kClasses)),
        params(model::Model(spec).num_params()) {}

  std::mt19937_64 rng;
  data::Dataset data;
  model::ModelSpec spec;
  int64_t params;
};

// The gradient one model computes alone, the reference.
std::vector<float> Direct(const model::ModelSpec& spec, const data::Dataset& data,
                          const std::vector<float>& params, const std::vector<int64_t>& samples) {
  model::Model model(spec);
  Eigen::MatrixXf x;
  std::vector<int32_t> y;
  data.Gather(samples, &x, &y);
  std::vector<float> grad(static_cast<size_t>(model.num_params()));
  model.LossAndGradient(params, x, y, grad);
  return grad;
}

struct Push {
  int64_t worker = 0;
  std::shared_ptr<const std::vector<float>> model;
  std::vector<int64_t> samples;
};

// A model of `params` random values.
std::shared_ptr<const std::vector<float>> RandomModel(int64_t params, std::mt19937_64& rng) {
  return std::make_shared<const std::vector<float>>(RandomVector<float>(params, 0.5f, rng));
}

// Worker w's push on `model` of `count` samples drawn from the data's rows.
Push RandomPush(int64_t w, std::shared_ptr<const std::vector<float>> model, int count,
                std::mt19937_64& rng) {
  Push push{w, std::move(model), {}};
  std::uniform_int_distribution<int64_t> row(0, kRows - 1);
  for (int i = 0; i < count; ++i) push.samples.push_back(row(rng));
  return push;
}

TEST_CASE("sim push gradients: the same on any number of threads, taken in any order") {
  GradientJob job(7, "mlp:5");
  auto& [rng, data, spec, params] = job;
  constexpr int64_t kWorkers = 24;
  std::vector<Push> first;
  std::vector<Push> second;
  for (int64_t w = 0; w < kWorkers; ++w)
    first.push_back(RandomPush(w, RandomModel(params, rng), 6, rng));
  for (int64_t w = 0; w < kWorkers; ++w)
    second.push_back(RandomPush(w, RandomModel(params, rng), 6, rng));

  for (int64_t threads : {1, 2, 4}) {
    CAPTURE(threads);
    PushGradients gradients(spec, data, threads);
    for (const Push& p : first) gradients.Expect(p.worker, p.model, p.samples);
    // Every third worker's push is dropped and replaced before it is taken:
    // what is taken is the new one's gradient.
    for (int64_t w = 0; w < kWorkers; w += 3) {
      const Push& p = second[static_cast<size_t>(w)];
      gradients.Expect(w, p.model, p.samples);
    }
    // Taken from the last worker back, against the order they were expected.
    for (int64_t w = kWorkers; w-- > 0;) {
      const Push& p = w % 3 == 0 ? second[static_cast<size_t>(w)] : first[static_cast<size_t>(w)];
      CHECK(std::vector<int64_t>(gradients.SamplesOf(w).begin(), gradients.SamplesOf(w).end()) ==
            p.samples);
      const std::span<const float> got = gradients.Take(w);
      const std::vector<float> want = Direct(spec, data, *p.model, p.samples);
      CHECK(std::vector<float>(got.begin(), got.end()) == want);
    }
    // A second round, taken in the order expected.
    for (const Push& p : second) gradients.Expect(p.worker, p.model, p.samples);
    for (const Push& p : second) {
      const std::span<const float> got = gradients.Take(p.worker);
      CHECK(std::vector<float>(got.begin(), got.end()) == Direct(spec, data, *p.model, p.samples));
    }
  }
}

TEST_CASE("sim push gradients: softmax's rows in place, the same bits on any number of threads") {
  GradientJob job(5, "softmax");
  auto& [rng, data, spec, params] = job;
  constexpr int64_t kWorkers = 10;
  // Two model versions, each shared by half the workers, as a round's pushes are.
  const std::vector<std::shared_ptr<const std::vector<float>>> models = {RandomModel(params, rng),
                                                                         RandomModel(params, rng)};
  std::vector<Push> pushes;
  for (int64_t w = 0; w < kWorkers; ++w) {
    pushes.push_back(RandomPush(w, models[static_cast<size_t>(w % 2)], 7, rng));
  }
  std::vector<std::vector<float>> first_run;
  for (int64_t threads : {1, 2, 4}) {
    CAPTURE(threads);
    PushGradients gradients(spec, data, threads);
    for (const Push& p : pushes) gradients.Expect(p.worker, p.model, p.samples);
    for (const Push& p : pushes) {
      const std::span<const float> got = gradients.Take(p.worker);
      const std::vector<float> want = Direct(spec, data, *p.model, p.samples);
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < want.size(); ++i)
        CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-4));
      if (threads == 1) {
        first_run.emplace_back(got.begin(), got.end());
      } else {
        CHECK(std::vector<float>(got.begin(), got.end()) ==
              first_run[static_cast<size_t>(p.worker)]);
      }
    }
  }
}

}  // namespace
}  // namespace dmlps::sim
