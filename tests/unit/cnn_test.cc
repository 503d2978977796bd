// The convolutional network: its spelling, its building blocks, its gradient
// against finite differences in double, the float model against the double
// one, and a short training run that must learn.
#include "model/cnn.h"

#include <doctest/doctest.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "dmlps/model/backend.h"
#include "dmlps/model/model.h"
#include "model_test_util.h"

namespace dmlps::model {
namespace {

using testing::MustParse;
using testing::RandomLabels;
using testing::RandomVector;

double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}

// Eigen's products on one thread while alive: OpenMP threads that wait for
// each other on a busy machine make thousands of tiny products crawl.
class OneEigenThread {
 public:
  OneEigenThread() : before_(Eigen::nbThreads()) { Eigen::setNbThreads(1); }
  ~OneEigenThread() { Eigen::setNbThreads(before_); }
  OneEigenThread(const OneEigenThread&) = delete;
  OneEigenThread& operator=(const OneEigenThread&) = delete;

 private:
  int before_;
};

// He-uniform parameters, as Model::Initialize draws them, in double.
std::vector<double> InitialParams(const ModelSpec& spec, uint64_t seed) {
  std::vector<float> params(static_cast<size_t>(spec.NumParams()));
  Model(spec).Initialize(seed, params);
  std::vector<double> out(params.begin(), params.end());
  // Nonzero biases, so that their gradients are exercised too.
  std::mt19937_64 rng(seed + 1);
  std::uniform_real_distribution<double> dist(-0.1, 0.1);
  int64_t offset = 0;
  for (const auto& [rows, cols] : spec.LayerShapes()) {
    offset += rows * cols;
    for (int64_t i = 0; i < rows; ++i) out[static_cast<size_t>(offset + i)] = dist(rng);
    offset += rows;
  }
  return out;
}

}  // namespace

TEST_CASE("ParseModelSpec accepts cnn spellings and sizes the network") {
  ModelSpec dflt = MustParse("cnn", 784, 10);
  CHECK(dflt.conv == std::vector<int64_t>{16, 32});
  CHECK(dflt.hidden == std::vector<int64_t>{128});
  CHECK(dflt.image_side == 28);
  CHECK(dflt.Name() == "cnn:16,32,128");
  CHECK(MustParse(dflt.Name(), 784, 10).Name() == dflt.Name());

  ModelSpec small = MustParse("cnn:4,8,16", 784, 10);
  // conv1 4x9+4, conv2 8x36+8, dense 16x(8*7*7)+16, output 10x16+10.
  CHECK(small.NumParams() == 40 + 296 + 6288 + 170);
  CHECK(Model(small).num_params() == small.NumParams());
  const auto shapes = small.LayerShapes();
  REQUIRE(shapes.size() == 4);
  CHECK(shapes[2] == std::pair<int64_t, int64_t>{16, 392});

  ModelSpec no_dense = MustParse("cnn:2,3", 64, 4);
  CHECK(no_dense.hidden.empty());
  CHECK(no_dense.Name() == "cnn:2,3");
  CHECK(no_dense.LayerShapes().back() == std::pair<int64_t, int64_t>{4, 3 * 2 * 2});

  // The dense models keep their layout.
  CHECK(MustParse("mlp:32,16", 784, 10).NumParams() == 784 * 32 + 32 + 32 * 16 + 16 + 16 * 10 + 10);
}

TEST_CASE("ParseModelSpec refuses malformed cnn spellings and unfit inputs") {
  for (const char* text : {"cnn:", "cnn:8", "cnn:0,4", "cnn:2000,4", "cnn:4,x", "cnn:4,8,",
                           "cnn:4,8,0", "cnn4,8", "CNN"}) {
    INFO(text);
    Result<ModelSpec> spec = ParseModelSpec(text, 784, 10);
    CHECK_FALSE(spec.ok());
    if (!spec.ok()) CHECK(spec.status().message().find(text) != std::string::npos);
  }
  // Not a square; a square whose side is not a multiple of 4.
  for (int64_t dim : {int64_t{100}, int64_t{785}, int64_t{36}}) {
    Result<ModelSpec> spec = ParseModelSpec("cnn", dim, 10);
    REQUIRE_FALSE(spec.ok());
    CHECK(spec.status().message().find("multiple of 4") != std::string::npos);
  }
}

TEST_CASE("Im2Col copies 3x3 neighbourhoods and Col2Im is its adjoint") {
  // One 4x4 image, one channel, pixels 1..16: the centre pixel (1,1) sees
  // rows 0..2 and columns 0..2; the corner (0,0) sees zeros outside.
  std::vector<double> image(16);
  for (int i = 0; i < 16; ++i) image[static_cast<size_t>(i)] = i + 1;
  std::vector<double> cols(9 * 16);
  Im2Col(image.data(), 1, 4, 1, cols.data());
  const double* centre = cols.data() + 9 * (1 * 4 + 1);
  CHECK(std::vector<double>(centre, centre + 9) ==
        std::vector<double>{1, 2, 3, 5, 6, 7, 9, 10, 11});
  const double* corner = cols.data();
  CHECK(std::vector<double>(corner, corner + 9) == std::vector<double>{0, 0, 0, 0, 1, 2, 0, 5, 6});

  // <Im2Col(a), b> == <a, Col2Im(b)> for 3 channels over 2 images of 8x8.
  std::mt19937_64 rng(7);
  const int64_t c = 3, s = 8, n = 2;
  std::vector<double> a = RandomVector<double>(c * n * s * s, 1, rng);
  std::vector<double> b = RandomVector<double>(9 * c * n * s * s, 1, rng);
  std::vector<double> a_cols(b.size()), b_back(a.size());
  Im2Col(a.data(), c, s, n, a_cols.data());
  Col2Im(b.data(), c, s, n, b_back.data());
  CHECK(Dot(a_cols, b) == doctest::Approx(Dot(a, b_back)).epsilon(1e-12));
}

TEST_CASE("MaxPool2 keeps each window's maximum and routes its gradient there") {
  // Two channels of one 4x4 image; channel 1 is channel 0 negated.
  std::vector<float> in(2 * 16);
  for (int p = 0; p < 16; ++p) {
    in[static_cast<size_t>(2 * p)] = static_cast<float>((p * 7) % 16);
    in[static_cast<size_t>(2 * p + 1)] = -static_cast<float>((p * 7) % 16);
  }
  std::vector<float> out(2 * 4);
  std::vector<uint8_t> window(out.size());
  MaxPool2(in.data(), 2, 4, 1, out.data(), window.data());
  for (int py = 0; py < 2; ++py) {
    for (int px = 0; px < 2; ++px) {
      for (int ch = 0; ch < 2; ++ch) {
        float best = -1e9f;
        for (int dy = 0; dy < 2; ++dy) {
          for (int dx = 0; dx < 2; ++dx) {
            best =
                std::max(best, in[static_cast<size_t>(((2 * py + dy) * 4 + 2 * px + dx) * 2 + ch)]);
          }
        }
        CHECK(out[static_cast<size_t>((py * 2 + px) * 2 + ch)] == best);
      }
    }
  }
  std::vector<float> dout = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> din(in.size());
  MaxPool2Backward(dout.data(), window.data(), 2, 4, 1, din.data());
  // Every upstream value lands once, on an input equal to its window's max.
  float total = 0;
  int nonzero = 0;
  for (size_t i = 0; i < din.size(); ++i) {
    if (din[i] != 0) {
      ++nonzero;
      total += din[i];
    }
  }
  CHECK(nonzero == 8);
  CHECK(total == 36);
  for (size_t o = 0; o < out.size(); ++o) {
    const int64_t ch = static_cast<int64_t>(o) % 2;
    const int64_t pixel = static_cast<int64_t>(o) / 2;
    const int64_t k = window[o];
    const int64_t at = (2 * (pixel / 2) + (k >> 1)) * 4 + 2 * (pixel % 2) + (k & 1);
    CHECK(in[static_cast<size_t>(at * 2 + ch)] == out[o]);
    CHECK(din[static_cast<size_t>(at * 2 + ch)] == dout[o]);
  }
}

TEST_CASE("The CNN's gradient matches central differences in double") {
  // 8x8 images, 3 classes, with and without a hidden dense layer; 130
  // samples cross the 128-sample slice boundary, so slices must add up.
  OneEigenThread one_thread;
  for (const char* text : {"cnn:3,4,5", "cnn:2,3"}) {
    ModelSpec spec = MustParse(text, 64, 3);
    INFO(spec.Name());
    std::mt19937_64 rng(11);
    const int64_t n = spec.hidden.empty() ? 20 : 130;
    std::vector<double> x = RandomVector<double>(spec.input_dim * n, 1, rng);
    std::vector<int32_t> y = RandomLabels(n, spec.classes, rng);
    std::vector<double> params = InitialParams(spec, 3);
    CnnCore<double> net(spec);
    std::vector<double> grad(params.size(), std::nan(""));
    const double loss = net.LossAndGradient(params, x.data(), n, y, grad);
    CHECK(std::isfinite(loss));
    REQUIRE(std::all_of(grad.begin(), grad.end(), [](double g) { return std::isfinite(g); }));

    const double eps = 1e-6;
    std::vector<double> scratch(params.size());
    double worst = 0, norm = 0;
    for (size_t i = 0; i < params.size(); ++i) {
      const double original = params[i];
      params[i] = original + eps;
      const double up = net.LossAndGradient(params, x.data(), n, y, scratch);
      params[i] = original - eps;
      const double down = net.LossAndGradient(params, x.data(), n, y, scratch);
      params[i] = original;
      const double numeric = (up - down) / (2 * eps);
      worst = std::max(worst, std::abs(numeric - grad[i]));
      norm = std::max(norm, std::abs(grad[i]));
    }
    INFO("largest gradient ", norm, ", largest difference ", worst);
    CHECK(norm > 1e-3);
    CHECK(worst < 1e-7);
    // The loss is the mean over the batch, not the sum.
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) {
      double loss_j = 0;
      std::vector<double> one(params.size());
      loss_j = net.LossAndGradient(params, x.data() + j * spec.input_dim, 1,
                                   std::span<const int32_t>(y.data() + j, 1), one);
      sum += loss_j;
    }
    CHECK(loss == doctest::Approx(sum / n).epsilon(1e-12));
  }
}

TEST_CASE("The float CNN model agrees with the double one and scores what it computes") {
  OneEigenThread one_thread;
  ModelSpec spec = MustParse("cnn:4,6,8", 144, 5);
  std::mt19937_64 rng(5);
  const int64_t n = 40;
  std::vector<double> x = RandomVector<double>(spec.input_dim * n, 1, rng);
  std::vector<int32_t> y = RandomLabels(n, spec.classes, rng);
  std::vector<double> params = InitialParams(spec, 9);
  CnnCore<double> reference(spec);
  std::vector<double> expected(params.size());
  const double expected_loss = reference.LossAndGradient(params, x.data(), n, y, expected);

  Model model(spec);
  Eigen::MatrixXf xf(spec.input_dim, n);
  for (int64_t i = 0; i < xf.size(); ++i)
    xf.data()[i] = static_cast<float>(x[static_cast<size_t>(i)]);
  std::vector<float> pf(params.begin(), params.end());
  std::vector<float> grad(params.size());
  const double loss = model.LossAndGradient(pf, xf, y, grad);
  CHECK(loss == doctest::Approx(expected_loss).epsilon(1e-5));
  double diff = 0, ref = 0;
  for (size_t i = 0; i < grad.size(); ++i) {
    diff += (grad[i] - expected[i]) * (grad[i] - expected[i]);
    ref += expected[i] * expected[i];
  }
  CHECK(std::sqrt(diff / ref) < 1e-4);

  // Score: the same loss summed, and the argmax hits counted by hand.
  double loss_sum = 0;
  int64_t correct = -1;
  model.Score(pf, xf, y, &loss_sum, &correct);
  CHECK(loss_sum / n == doctest::Approx(loss).epsilon(1e-6));
  CHECK(correct >= 0);
  CHECK(correct <= n);

  // A copy computes the same, with scratch of its own.
  Model copy = model;
  std::vector<float> grad2(params.size());
  CHECK(copy.LossAndGradient(pf, xf, y, grad2) == loss);
  CHECK(grad2 == grad);

  // The CPU backend is the model.
  Result<std::unique_ptr<Backend>> backend = MakeBackend(spec, Device{});
  REQUIRE(backend.ok());
  std::vector<float> grad3(params.size());
  Result<double> backend_loss = (*backend)->LossAndGradient(pf, xf, y, grad3);
  REQUIRE(backend_loss.ok());
  CHECK(*backend_loss == loss);
  CHECK(grad3 == grad);
}

// Twelve-pixel-square images of four kinds of stroke (vertical, horizontal,
// diagonal, anti-diagonal) at random places, in noise.
void Strokes(int64_t n, std::mt19937_64& rng, Eigen::MatrixXf* x, std::vector<int32_t>* y) {
  const int64_t s = 12;
  std::normal_distribution<float> noise(0.0f, 0.3f);
  std::uniform_int_distribution<int> place(2, 9);
  std::uniform_int_distribution<int32_t> kind(0, 3);
  x->resize(s * s, n);
  y->resize(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < s * s; ++i) (*x)(i, j) = noise(rng);
    const int32_t k = kind(rng);
    (*y)[static_cast<size_t>(j)] = k;
    const int cy = place(rng), cx = place(rng);
    for (int t = -2; t <= 2; ++t) {
      int py = cy, px = cx;
      if (k == 0) py += t;
      if (k == 1) px += t;
      if (k == 2) py += t, px += t;
      if (k == 3) py += t, px -= t;
      py = std::clamp(py, 0, 11);
      px = std::clamp(px, 0, 11);
      (*x)(py * s + px, j) += 2.0f;
    }
  }
}

TEST_CASE("A small CNN learns: the loss falls and held-out accuracy rises") {
  OneEigenThread one_thread;
  ModelSpec spec = MustParse("cnn:4,8,16", 144, 4);
  Model model(spec);
  std::vector<float> params(static_cast<size_t>(model.num_params()));
  model.Initialize(21, params);
  std::mt19937_64 rng(4);
  Eigen::MatrixXf train_x, test_x;
  std::vector<int32_t> train_y, test_y;
  Strokes(512, rng, &train_x, &train_y);
  Strokes(256, rng, &test_x, &test_y);

  double before_loss = 0;
  int64_t before_correct = 0;
  model.Score(params, test_x, test_y, &before_loss, &before_correct);

  // SGD with momentum 0.9, as the server applies it.
  std::vector<float> grad(params.size()), velocity(params.size(), 0.0f);
  const int64_t batch = 32;
  for (int epoch = 0; epoch < 8; ++epoch) {
    for (int64_t first = 0; first < train_x.cols(); first += batch) {
      Eigen::MatrixXf x = train_x.middleCols(first, batch);
      std::vector<int32_t> y(train_y.begin() + first, train_y.begin() + first + batch);
      model.LossAndGradient(params, x, y, grad);
      for (size_t i = 0; i < params.size(); ++i) {
        velocity[i] = 0.9f * velocity[i] + grad[i];
        params[i] -= 0.02f * velocity[i];
      }
    }
  }
  double after_loss = 0;
  int64_t after_correct = 0;
  model.Score(params, test_x, test_y, &after_loss, &after_correct);
  INFO("accuracy ", before_correct / 256.0, " -> ", after_correct / 256.0, ", loss ",
       before_loss / 256, " -> ", after_loss / 256);
  CHECK(after_loss < 0.5 * before_loss);
  CHECK(after_correct >= 0.9 * 256);
  CHECK(before_correct < 0.5 * 256);
}

TEST_CASE("Devices parse, the CPU probes, and memory sizes a batch") {
  Result<Device> cpu = ParseDevice("cpu");
  REQUIRE(cpu.ok());
  CHECK_FALSE(cpu->is_cuda());
  CHECK(cpu->Name() == "cpu");
  Result<Device> cuda = ParseDevice("cuda");
  REQUIRE(cuda.ok());
  CHECK(cuda->is_cuda());
  CHECK(cuda->Name() == "cuda:0");
  Result<Device> third = ParseDevice("cuda:2");
  REQUIRE(third.ok());
  CHECK(third->index == 2);
  for (const char* text : {"", "gpu", "cuda:", "cuda:-1", "cuda:x", "cuda:1024", "CPU"}) {
    INFO(text);
    CHECK_FALSE(ParseDevice(text).ok());
  }

  std::string description;
  Result<DeviceMemory> memory = ProbeDevice(Device{}, &description);
  REQUIRE(memory.ok());
  CHECK(description == "cpu");
  CHECK(memory->total_bytes > 0);
  CHECK(memory->free_bytes > 0);
  CHECK(memory->free_bytes <= memory->total_bytes);
  if (!BuiltWithCuda()) {
    Result<DeviceMemory> gpu = ProbeDevice(*cuda);
    REQUIRE_FALSE(gpu.ok());
    CHECK(gpu.status().code() == StatusCode::kUnavailable);
    CHECK(gpu.status().message().find("DMLPS_WITH_CUDA") != std::string::npos);
    CHECK_FALSE(MakeBackend(MustParse("softmax", 784, 10), *cuda).ok());
  }

  // A CNN needs far more scratch per sample than softmax regression, so the
  // same memory holds a smaller batch; the cap is linear in the memory.
  ModelSpec softmax = MustParse("softmax", 784, 10);
  ModelSpec cnn = MustParse("cnn", 784, 10);
  CHECK(cnn.ScratchFloatsPerSample() > 20 * softmax.ScratchFloatsPerSample());
  const int64_t gib = int64_t{1} << 30;
  const int64_t small = MaxBatchForMemory(cnn, gib);
  const int64_t large = MaxBatchForMemory(cnn, 4 * gib);
  CHECK(small > 100);
  CHECK(large > 3 * small);
  CHECK(MaxBatchForMemory(softmax, gib) > small);
  CHECK(MaxBatchForMemory(cnn, 0) == 1);
  CHECK(small * cnn.ScratchFloatsPerSample() * 4 <= gib);
}

}  // namespace dmlps::model
