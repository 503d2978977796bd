// Softmax regression's gradient read in place from the rows, with AVX2:
// the gradient of a gathered batch to rounding, and the same bits every time.
#include "model/softmax_rows.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "model_test_util.h"

namespace dmlps::model {
namespace {

using testing::MustParse;
using testing::RandomDataset;
using testing::RandomVector;

data::Dataset MakeData(int64_t rows, int64_t dim, int64_t classes, std::mt19937_64& rng) {
  return RandomDataset(rows, dim, classes, rng);
}

TEST_CASE("softmax rows: the gathered batch's loss and gradient, to rounding") {
  // 784 features fill whole registers, 13 and 3 leave a tail; 27 classes
  // take three blocks, 10 one.
  struct Shape {
    int64_t dim;
    int64_t classes;
  };
  for (const Shape shape : {Shape{784, 10}, Shape{13, 27}, Shape{3, 2}}) {
    CAPTURE(shape.dim);
    CAPTURE(shape.classes);
    std::mt19937_64 rng(11);
    constexpr int64_t kRows = 50;
    const data::Dataset data = MakeData(kRows, shape.dim, shape.classes, rng);
    const ModelSpec spec = MustParse("softmax", shape.dim, shape.classes);
    if (!SoftmaxRowsFit(spec, data)) {
      MESSAGE("this CPU lacks AVX2 and FMA: the kernel is not used, nothing to compare");
      return;
    }
    Model model(spec);
    const std::vector<float> params = RandomVector<float>(model.num_params(), 0.3f, rng);
    // Rows repeat and come out of order, as a worker's batch does.
    const std::vector<int64_t> samples = {7, 3, 49, 0, 7, 21, 35, 12, 12, 44, 1};

    Eigen::MatrixXf x;
    std::vector<int32_t> y;
    data.Gather(samples, &x, &y);
    std::vector<float> want(params.size());
    const double want_loss = model.LossAndGradient(params, x, y, want);

    SoftmaxRowsScratch scratch;
    SoftmaxRowsLoadWeights(spec, params, &scratch);
    std::vector<float> got(params.size());
    const double loss = SoftmaxRowsLossAndGradient(spec, params, data, samples, got, &scratch);
    CHECK(loss == doctest::Approx(want_loss).epsilon(1e-5));
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
    }
    CHECK(worst < 1e-5);

    // Again on fresh scratch: the same bits.
    SoftmaxRowsScratch other;
    SoftmaxRowsLoadWeights(spec, params, &other);
    std::vector<float> again(params.size(), -1.0f);
    CHECK(SoftmaxRowsLossAndGradient(spec, params, data, samples, again, &other) == loss);
    CHECK(again == got);
  }
}

TEST_CASE("softmax rows: only softmax regression on dense rows") {
  std::mt19937_64 rng(3);
  data::Dataset data = MakeData(4, 6, 3, rng);
  CHECK_FALSE(SoftmaxRowsFit(MustParse("mlp:4", 6, 3), data));
  CHECK_FALSE(SoftmaxRowsFit(MustParse("softmax", 7, 3), data));
  data.row_offsets = {0, 0, 0, 0, 0};
  CHECK_FALSE(SoftmaxRowsFit(MustParse("softmax", 6, 3), data));
}

}  // namespace
}  // namespace dmlps::model
