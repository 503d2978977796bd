#include "dmlps/worker/computation.h"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

#include "dmlps/model/backend.h"
#include "dmlps/model/model.h"
#include "dmlps/worker/epoch_cursor.h"
#include "model_test_util.h"
#include "worker/compute.h"

namespace dmlps::worker {
namespace {

using model::testing::MustParse;
using model::testing::RandomLabels;
using model::testing::RandomVector;

// Records the sample ids it is asked for; the loss is the call number.
class RecordingComputation : public Computation {
 public:
  int64_t num_params() const override { return 3; }
  int64_t num_samples() const override { return 10; }
  Result<double> Compute(std::span<const float> params, std::span<const int64_t> sample_ids,
                         std::span<float> grad) override {
    if (fail) return Status::IOError("the computation's disk went away");
    calls.emplace_back(sample_ids.begin(), sample_ids.end());
    for (float& g : grad) g = params[0];
    return static_cast<double>(calls.size());
  }
  bool fail = false;
  std::vector<std::vector<int64_t>> calls;
};

StepComputer MakeComputer(Computation& computation, uint64_t seed, double slowdown,
                          std::vector<std::chrono::microseconds>* pauses) {
  StragglerSpec spec;
  spec.slowdown = slowdown;
  return StepComputer(computation, seed, StragglerProfile(spec, 0, 1), nullptr,
                      [pauses](std::chrono::microseconds d) {
                        pauses->push_back(d);
                        return Status::Ok();
                      });
}

TEST_CASE("StepComputer hands a Computation the epoch cursor's sample ids") {
  RecordingComputation computation;
  std::vector<std::chrono::microseconds> pauses;
  StepComputer computer = MakeComputer(computation, 42, 1, &pauses);
  EpochCursor cursor(10, 42);
  std::vector<float> params{2, 0, 0};
  std::vector<float> grad(3);
  std::vector<int64_t> expected;
  for (int64_t step = 0; step < 5; ++step) {  // 5 x 7 samples cross three epochs
    Result<StepResult> result = computer.Compute(step, 7, params, grad);
    REQUIRE(result.ok());
    CHECK(result->samples == 7);
    CHECK(result->loss == doctest::Approx(static_cast<double>(step + 1)));
    cursor.Take(7, &expected);
    CHECK(computation.calls.back() == expected);
    CHECK(grad == std::vector<float>{2, 2, 2});
  }
  CHECK(pauses.empty());  // no slowdown: no straggling
}

TEST_CASE("StepComputer straggles around any Computation and passes its errors on") {
  RecordingComputation computation;
  std::vector<std::chrono::microseconds> pauses;
  StepComputer computer = MakeComputer(computation, 1, 4, &pauses);
  std::vector<float> params(3), grad(3);
  Result<StepResult> result = computer.Compute(0, 2, params, grad);
  REQUIRE(result.ok());
  CHECK(result->straggle.count() == 3 * result->compute.count());
  CHECK(pauses.size() == (result->straggle.count() > 0 ? 1u : 0u));
  computation.fail = true;
  Result<StepResult> failed = computer.Compute(1, 2, params, grad);
  REQUIRE(!failed.ok());
  CHECK(failed.status().code() == StatusCode::kIOError);
}

TEST_CASE("DatasetComputation computes the model's gradient on the rows it is given") {
  std::mt19937_64 rng(7);
  const model::ModelSpec spec = MustParse("mlp:5", 4, 3);
  data::Dataset dataset;
  dataset.dim = 4;
  dataset.classes = 3;
  dataset.labels = RandomLabels(20, 3, rng);
  dataset.dense = RandomVector<float>(20 * 4, 1.0f, rng);
  Result<std::unique_ptr<model::Backend>> backend = model::MakeBackend(spec, model::Device{});
  REQUIRE(backend.ok());
  DatasetComputation computation(dataset, std::move(*backend));
  CHECK(computation.num_samples() == 20);
  model::Model reference(spec);
  REQUIRE(computation.num_params() == reference.num_params());
  std::vector<float> params(static_cast<size_t>(reference.num_params()));
  reference.Initialize(3, params);
  const std::vector<int64_t> ids{19, 0, 7, 7, 3};
  std::vector<float> grad(params.size()), expected(params.size());
  Result<double> loss = computation.Compute(params, ids, grad);
  REQUIRE(loss.ok());
  Eigen::MatrixXf x;
  std::vector<int32_t> y;
  dataset.Gather(ids, &x, &y);
  CHECK(*loss == doctest::Approx(reference.LossAndGradient(params, x, y, expected)));
  CHECK(grad == expected);
}

}  // namespace
}  // namespace dmlps::worker
