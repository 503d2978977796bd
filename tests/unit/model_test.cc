#include "dmlps/model/model.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/data/dataset.h"
#include "model_test_util.h"

namespace dmlps::model {
namespace {

using testing::MustParse;
using testing::RandomLabels;

Eigen::MatrixXf RandomUniform(Eigen::Index rows, Eigen::Index cols, float scale,
                              std::mt19937_64& rng) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  Eigen::MatrixXf m(rows, cols);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = dist(rng);
  return m;
}

// Signs of every hidden pre-activation, computed here independently of the
// model, so that a finite difference that crosses a ReLU kink can be spotted.
std::vector<bool> HiddenSigns(const ModelSpec& spec, const std::vector<float>& params,
                              const Eigen::MatrixXf& x) {
  std::vector<bool> signs;
  Eigen::MatrixXf a = x;
  int64_t offset = 0;
  int64_t in = spec.input_dim;
  for (int64_t out : spec.hidden) {
    Eigen::Map<const Eigen::MatrixXf> w(params.data() + offset, out, in);
    Eigen::Map<const Eigen::VectorXf> b(params.data() + offset + out * in, out);
    Eigen::MatrixXf z = w * a;
    z.colwise() += b;
    for (Eigen::Index i = 0; i < z.size(); ++i) signs.push_back(z.data()[i] > 0.0f);
    a = z.cwiseMax(0.0f);
    offset += out * in + out;
    in = out;
  }
  return signs;
}

struct GradientCheck {
  std::vector<float> analytic;  // what LossAndGradient wrote
  std::vector<float> numeric;   // central differences; NaN where skipped
  int64_t skipped = 0;          // parameters whose difference crossed a ReLU kink
};

// Central differences of the model's own (float) loss for EVERY parameter.
// A parameter is skipped when moving it by +-eps flips the sign of any hidden
// pre-activation, since the loss is not differentiable across that kink.
GradientCheck CheckGradient(const ModelSpec& spec, int64_t batch, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Model model(spec);
  const int64_t p = model.num_params();
  Eigen::MatrixXf x = RandomUniform(spec.input_dim, batch, 1.0f, rng);
  std::vector<int32_t> y = RandomLabels(batch, spec.classes, rng);
  Eigen::MatrixXf flat = RandomUniform(p, 1, 0.8f, rng);
  std::vector<float> params(flat.data(), flat.data() + p);

  GradientCheck check;
  check.analytic.assign(static_cast<size_t>(p), std::numeric_limits<float>::quiet_NaN());
  model.LossAndGradient(params, x, y, check.analytic);

  const float eps = 1e-2f;
  const std::vector<bool> base_signs = HiddenSigns(spec, params, x);
  std::vector<float> scratch(static_cast<size_t>(p));
  check.numeric.assign(static_cast<size_t>(p), std::numeric_limits<float>::quiet_NaN());
  for (int64_t i = 0; i < p; ++i) {
    const float original = params[i];
    params[i] = original + eps;
    const float up = params[i];
    const bool kink_up = HiddenSigns(spec, params, x) != base_signs;
    const double loss_up = model.LossAndGradient(params, x, y, scratch);
    params[i] = original - eps;
    const float down = params[i];
    const bool kink_down = HiddenSigns(spec, params, x) != base_signs;
    const double loss_down = model.LossAndGradient(params, x, y, scratch);
    params[i] = original;
    if (kink_up || kink_down) {
      ++check.skipped;
      continue;
    }
    // Divide by the step float actually took, not the nominal 2 * eps.
    check.numeric[i] = static_cast<float>((loss_up - loss_down) / (double{up} - double{down}));
  }
  return check;
}

// Indices where `gradient` and the finite differences disagree. On these
// problems the two differ by under 1e-5 (the loss is summed in double), so an
// absolute floor of 1e-4 plus 0.1% leaves a wide margin yet catches any real
// mistake; gradients here are 1e-4..1 in size.
std::vector<int64_t> Mismatches(const std::vector<float>& numeric,
                                const std::vector<float>& gradient) {
  std::vector<int64_t> bad;
  for (size_t i = 0; i < numeric.size(); ++i) {
    if (std::isnan(numeric[i])) continue;
    const double fd = numeric[i];
    const double g = gradient[i];
    const double tolerance = 1e-4 + 1e-3 * std::max(std::abs(fd), std::abs(g));
    if (!(std::abs(fd - g) <= tolerance)) bad.push_back(static_cast<int64_t>(i));
  }
  return bad;
}

void ExpectGradientMatches(const ModelSpec& spec, int64_t batch, uint64_t seed) {
  INFO("model ", spec.Name(), ", batch ", batch, ", seed ", seed);
  GradientCheck check = CheckGradient(spec, batch, seed);
  const int64_t p = static_cast<int64_t>(check.analytic.size());
  // grad started as NaN, so this says every entry was written.
  REQUIRE(std::all_of(check.analytic.begin(), check.analytic.end(),
                      [](float g) { return std::isfinite(g); }));
  // Few skips, so the check still covers almost every parameter.
  CHECK(check.skipped * 10 <= p);
  std::vector<int64_t> bad = Mismatches(check.numeric, check.analytic);
  if (!bad.empty()) {
    const int64_t i = bad.front();
    INFO("first mismatch at parameter ", i, ": numeric ", check.numeric[i], " analytic ",
         check.analytic[i]);
    CHECK(bad.empty());
  }
  // The tolerance is tight enough to catch a gradient off by the batch size
  // (a forgotten 1/n) or with the wrong sign.
  std::vector<float> scaled = check.analytic;
  for (float& g : scaled) g *= static_cast<float>(std::max<int64_t>(batch, 2));
  CHECK(!Mismatches(check.numeric, scaled).empty());
  std::vector<float> negated = check.analytic;
  for (float& g : negated) g = -g;
  CHECK(!Mismatches(check.numeric, negated).empty());
}

// A dataset held in memory, dense and row-major, from columns of `x`.
data::Dataset DenseDataset(const Eigen::MatrixXf& x, const std::vector<int32_t>& y,
                           int64_t classes) {
  data::Dataset dataset;
  dataset.dim = x.rows();
  dataset.classes = classes;
  dataset.labels = y;
  dataset.dense.assign(x.data(), x.data() + x.size());  // column j of x is row j
  return dataset;
}

double LogSumExpMinus(std::initializer_list<double> logits, int label) {
  double sum = 0;
  for (double z : logits) sum += std::exp(z);
  return std::log(sum) - logits.begin()[label];
}

}  // namespace

TEST_CASE("ParseModelSpec accepts softmax and mlp spellings") {
  ModelSpec softmax = MustParse("softmax", 784, 10);
  CHECK(softmax.hidden.empty());
  CHECK(softmax.input_dim == 784);
  CHECK(softmax.classes == 10);
  CHECK(softmax.Name() == "softmax");

  ModelSpec one = MustParse("mlp:128", 784, 10);
  CHECK(one.hidden == std::vector<int64_t>{128});
  CHECK(one.Name() == "mlp:128");

  ModelSpec two = MustParse("mlp:32,16", 784, 10);
  CHECK(two.hidden == std::vector<int64_t>{32, 16});
  CHECK(two.Name() == "mlp:32,16");

  CHECK(MustParse("mlp:1", 1, 2).hidden == std::vector<int64_t>{1});
  CHECK(MustParse("mlp:65536", 3, 2).hidden == std::vector<int64_t>{65536});
  // Leading zeros are a number all the same; Name() gives the canonical form.
  CHECK(MustParse("mlp:007,1", 3, 2).Name() == "mlp:7,1");
}

TEST_CASE("ParseModelSpec rejects malformed spellings and sizes") {
  for (std::string_view text : {"",          "Softmax",
                                "softmax ",  " softmax",
                                "softmax:3", "linear",
                                "mlp",       "mlp:",
                                "MLP:3",     "mlp:0",
                                "mlp:65537", "mlp:-5",
                                "mlp:+5",    "mlp:12x",
                                "mlp:1,,2",  "mlp:1,",
                                "mlp:,1",    "mlp:1.5",
                                "mlp: 5",    "mlp:5 ",
                                "mlp:0x10",  "mlp:99999999999999999999999"}) {
    INFO("text \"", text, "\"");
    Result<ModelSpec> spec = ParseModelSpec(text, 784, 10);
    REQUIRE(!spec.ok());
    CHECK(spec.status().code() == StatusCode::kInvalidArgument);
    std::string quoted = "\"";  // built by appends: GCC 12 misreads `"\"" + string` (-Wrestrict)
    quoted += text;
    quoted += '"';
    CHECK(spec.status().message().find(quoted) != std::string::npos);
  }
  Result<ModelSpec> no_input = ParseModelSpec("softmax", 0, 10);
  REQUIRE(!no_input.ok());
  CHECK(no_input.status().code() == StatusCode::kInvalidArgument);
  CHECK(no_input.status().message().find("input size") != std::string::npos);
  Result<ModelSpec> one_class = ParseModelSpec("mlp:4", 784, 1);
  REQUIRE(!one_class.ok());
  CHECK(one_class.status().code() == StatusCode::kInvalidArgument);
  CHECK(one_class.status().message().find("class") != std::string::npos);
  Result<ModelSpec> huge = ParseModelSpec("mlp:65536,65536", int64_t{1} << 50, 10);
  REQUIRE(!huge.ok());
  CHECK(huge.status().message().find("too many parameters") != std::string::npos);
}

TEST_CASE("Model counts the parameters of each layer") {
  CHECK(Model(MustParse("softmax", 784, 10)).num_params() == 784 * 10 + 10);
  CHECK(Model(MustParse("mlp:128", 784, 10)).num_params() == 784 * 128 + 128 + 128 * 10 + 10);
  CHECK(Model(MustParse("mlp:32,16", 784, 10)).num_params() ==
        784 * 32 + 32 + 32 * 16 + 16 + 16 * 10 + 10);
}

TEST_CASE("Initialize is deterministic, He-uniform, with zero biases") {
  Model model(MustParse("mlp:32,16", 784, 10));
  const auto p = static_cast<size_t>(model.num_params());
  std::vector<float> a(p, -7.0f);
  std::vector<float> b(p, 7.0f);
  std::vector<float> c(p);
  model.Initialize(42, a);
  model.Initialize(42, b);
  model.Initialize(43, c);
  CHECK(a == b);
  CHECK(a != c);

  // Layers as {out, in}; each weight block is followed by its bias.
  const int64_t layers[3][2] = {{32, 784}, {16, 32}, {10, 16}};
  int64_t offset = 0;
  for (const auto& layer : layers) {
    const int64_t out = layer[0];
    const int64_t in = layer[1];
    const float limit = std::sqrt(6.0f / static_cast<float>(in));
    double sum = 0;
    float largest = 0;
    for (int64_t i = offset; i < offset + out * in; ++i) {
      largest = std::max(largest, std::abs(a[i]));
      sum += a[i];
    }
    // Inside the He-uniform limit, spread over the whole range, centred on zero.
    CHECK(largest <= limit);
    CHECK(largest > 0.9f * limit);
    CHECK(std::abs(sum / static_cast<double>(out * in)) < 0.1 * limit);
    CHECK(std::all_of(a.begin() + offset + out * in, a.begin() + offset + out * in + out,
                      [](float bias) { return bias == 0.0f; }));
    offset += out * in + out;
  }
  CHECK(offset == model.num_params());
}

TEST_CASE("LossAndGradient of softmax regression matches finite differences") {
  ExpectGradientMatches(MustParse("softmax", 7, 3), 6, 1);
  ExpectGradientMatches(MustParse("softmax", 5, 4), 1, 2);
}

TEST_CASE("LossAndGradient of an MLP matches finite differences") {
  ExpectGradientMatches(MustParse("mlp:5,4", 7, 3), 6, 3);
  ExpectGradientMatches(MustParse("mlp:5,4", 7, 3), 6, 4);
  ExpectGradientMatches(MustParse("mlp:6", 4, 5), 9, 5);
}

TEST_CASE("LossAndGradient gives the same answer whatever batch came before") {
  ModelSpec spec = MustParse("mlp:5,4", 7, 3);
  std::mt19937_64 rng(11);
  Model fresh(spec);
  Model reused(spec);
  std::vector<float> params(static_cast<size_t>(fresh.num_params()));
  fresh.Initialize(3, params);
  Eigen::MatrixXf small = RandomUniform(7, 3, 1.0f, rng);
  Eigen::MatrixXf big = RandomUniform(7, 8, 1.0f, rng);
  std::vector<int32_t> small_y = RandomLabels(3, 3, rng);
  std::vector<int32_t> big_y = RandomLabels(8, 3, rng);

  std::vector<float> g_fresh(params.size());
  std::vector<float> g_reused(params.size(), std::numeric_limits<float>::quiet_NaN());
  const double loss_fresh = fresh.LossAndGradient(params, small, small_y, g_fresh);
  reused.LossAndGradient(params, big, big_y, g_reused);
  reused.LossAndGradient(params, small, small_y, g_reused);
  reused.LossAndGradient(params, big, big_y, g_reused);
  const double loss_reused = reused.LossAndGradient(params, small, small_y, g_reused);
  CHECK(loss_fresh == loss_reused);
  CHECK(g_fresh == g_reused);

  // Score sees the same loss, summed rather than averaged.
  double loss_sum = 0;
  int64_t correct = -1;
  reused.Score(params, small, small_y, &loss_sum, &correct);
  CHECK(loss_sum / 3 == doctest::Approx(loss_fresh).epsilon(1e-6));
  CHECK(correct >= 0);
  CHECK(correct <= 3);
}

TEST_CASE("Score and Evaluate of softmax regression match a hand computation") {
  // W = [[1, 2], [0, -1]] stored column-major, then b = (0.5, -0.5).
  std::vector<float> params = {1, 0, 2, -1, 0.5f, -0.5f};
  Model model(MustParse("softmax", 2, 2));
  REQUIRE(model.num_params() == 6);
  Eigen::MatrixXf x(2, 3);
  x << 1, 0, 1,  //
      0, 1, 1;
  std::vector<int32_t> y = {0, 1, 0};
  // Logits per sample: (1.5, -0.5), (2.5, -1.5), (3.5, -1.5); the second is wrong.
  const double expected = LogSumExpMinus({1.5, -0.5}, 0) + LogSumExpMinus({2.5, -1.5}, 1) +
                          LogSumExpMinus({3.5, -1.5}, 0);
  double loss_sum = 0;
  int64_t correct = 0;
  model.Score(params, x, y, &loss_sum, &correct);
  CHECK(loss_sum == doctest::Approx(expected).epsilon(1e-6));
  CHECK(correct == 2);

  data::Dataset dataset = DenseDataset(x, y, 2);
  for (int64_t batch : {1, 2, 3, 1000}) {
    INFO("batch ", batch);
    EvalResult eval = model.Evaluate(params, dataset, batch);
    CHECK(eval.samples == 3);
    CHECK(eval.accuracy == doctest::Approx(2.0 / 3.0));
    CHECK(eval.loss == doctest::Approx(expected / 3).epsilon(1e-6));
  }
}

TEST_CASE("Score of an MLP applies ReLU to the hidden layer") {
  // One input, one hidden unit h = relu(2x - 1), logits (h, -h).
  std::vector<float> params = {2, -1, 1, -1, 0, 0};
  Model model(MustParse("mlp:1", 1, 2));
  REQUIRE(model.num_params() == 6);
  Eigen::MatrixXf x(1, 3);
  x << 1, 0, -3;
  std::vector<int32_t> y = {0, 1, 1};
  // h = 1, 0, 0: logits (1, -1), (0, 0), (0, 0). Ties go to class 0.
  const double expected = LogSumExpMinus({1, -1}, 0) + 2 * std::log(2.0);
  double loss_sum = 0;
  int64_t correct = 0;
  model.Score(params, x, y, &loss_sum, &correct);
  CHECK(loss_sum == doctest::Approx(expected).epsilon(1e-6));
  CHECK(correct == 1);
}

TEST_CASE("Evaluate of an empty dataset reports no samples") {
  Model model(MustParse("softmax", 4, 3));
  std::vector<float> params(static_cast<size_t>(model.num_params()));
  model.Initialize(1, params);
  data::Dataset empty;
  empty.dim = 4;
  empty.classes = 3;
  EvalResult eval = model.Evaluate(params, empty);
  CHECK(eval.samples == 0);
  CHECK(eval.accuracy == 0.0);
  CHECK(eval.loss == 0.0);
}

namespace {

// Plain minibatch SGD over `x`, `y` in a fixed shuffled order; returns the loss
// of the last step.
double TrainSgd(Model& model, std::vector<float>& params, const Eigen::MatrixXf& x,
                const std::vector<int32_t>& y, int steps, int64_t batch, float learning_rate) {
  std::mt19937_64 rng(5);
  std::vector<int64_t> order(y.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::vector<float> grad(params.size());
  Eigen::MatrixXf xb(x.rows(), batch);
  std::vector<int32_t> yb(static_cast<size_t>(batch));
  size_t next = order.size();
  double loss = 0;
  for (int step = 0; step < steps; ++step) {
    for (int64_t j = 0; j < batch; ++j) {
      if (next == order.size()) {
        std::shuffle(order.begin(), order.end(), rng);
        next = 0;
      }
      xb.col(j) = x.col(order[next]);
      yb[j] = y[order[next]];
      ++next;
    }
    loss = model.LossAndGradient(params, xb, yb, grad);
    for (size_t i = 0; i < params.size(); ++i) params[i] -= learning_rate * grad[i];
  }
  return loss;
}

}  // namespace

TEST_CASE("SGD fits separable blobs with softmax and with an MLP") {
  // Three Gaussian blobs in 5 dimensions, centred 3 apart.
  const int64_t per_class = 60;
  const int64_t classes = 3;
  std::mt19937_64 rng(21);
  std::normal_distribution<float> noise(0.0f, 0.4f);
  Eigen::MatrixXf x(5, per_class * classes);
  std::vector<int32_t> y;
  for (int64_t k = 0; k < classes; ++k) {
    for (int64_t i = 0; i < per_class; ++i) {
      const int64_t j = k * per_class + i;
      for (int64_t d = 0; d < 5; ++d) x(d, j) = noise(rng) + (d == k ? 3.0f : 0.0f);
      y.push_back(static_cast<int32_t>(k));
    }
  }
  data::Dataset dataset = DenseDataset(x, y, classes);

  for (std::string_view text : {"softmax", "mlp:16", "mlp:16,8"}) {
    INFO("model ", text);
    Model model(MustParse(text, 5, classes));
    std::vector<float> params(static_cast<size_t>(model.num_params()));
    model.Initialize(9, params);
    EvalResult before = model.Evaluate(params, dataset, 64);
    TrainSgd(model, params, x, y, 300, 16, 0.2f);
    EvalResult after = model.Evaluate(params, dataset, 64);
    CHECK(after.samples == per_class * classes);
    CHECK(after.loss < 0.1);
    CHECK(after.loss < 0.2 * before.loss);
    CHECK(after.accuracy >= 0.99);
  }
}

TEST_CASE("An MLP learns XOR, which softmax regression cannot") {
  // Points in the four quadrants, away from the axes; the label is the XOR of
  // the signs, so no linear classifier gets much more than 3/4 right.
  std::mt19937_64 rng(8);
  std::uniform_real_distribution<float> magnitude(0.2f, 1.0f);
  const int64_t n = 200;
  Eigen::MatrixXf x(2, n);
  std::vector<int32_t> y;
  for (int64_t j = 0; j < n; ++j) {
    const bool right = j % 2 == 0;
    const bool up = (j / 2) % 2 == 0;
    x(0, j) = right ? magnitude(rng) : -magnitude(rng);
    x(1, j) = up ? magnitude(rng) : -magnitude(rng);
    y.push_back(right != up ? 1 : 0);
  }
  data::Dataset dataset = DenseDataset(x, y, 2);

  Model mlp(MustParse("mlp:16", 2, 2));
  std::vector<float> mlp_params(static_cast<size_t>(mlp.num_params()));
  mlp.Initialize(4, mlp_params);
  TrainSgd(mlp, mlp_params, x, y, 600, 20, 0.3f);
  EvalResult mlp_eval = mlp.Evaluate(mlp_params, dataset);
  CHECK(mlp_eval.accuracy >= 0.99);
  CHECK(mlp_eval.loss < 0.1);

  Model linear(MustParse("softmax", 2, 2));
  std::vector<float> linear_params(static_cast<size_t>(linear.num_params()));
  linear.Initialize(4, linear_params);
  TrainSgd(linear, linear_params, x, y, 600, 20, 0.3f);
  EvalResult linear_eval = linear.Evaluate(linear_params, dataset);
  CHECK(linear_eval.accuracy <= 0.8);
  CHECK(linear_eval.loss > 0.5);
}

}  // namespace dmlps::model
