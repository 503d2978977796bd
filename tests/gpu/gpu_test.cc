// The CUDA backend against the CPU on the same inputs: every kernel, and the
// loss and gradient of every kind of model. Built with DMLPS_WITH_CUDA; exits
// 77 (skipped) when no GPU can be used.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <Eigen/Core>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "../unit/model_test_util.h"
#include "dmlps/model/backend.h"
#include "dmlps/model/model.h"
#include "model/cnn.h"
#include "model/cuda/cuda_net.h"

namespace dmlps::model {
namespace {

constexpr double kTolerance = 1e-4;

using testing::RandomVector;

// ||a - b|| / ||b||, in double.
double RelativeError(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double diff = 0, ref = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (double{a[i]} - b[i]) * (double{a[i]} - b[i]);
    ref += double{b[i]} * b[i];
  }
  return ref == 0 ? std::sqrt(diff) : std::sqrt(diff / ref);
}

#define REQUIRE_OK(expr)                              \
  do {                                                \
    Status status_ = (expr);                          \
    REQUIRE_MESSAGE(status_.ok(), status_.message()); \
  } while (false)

}  // namespace

TEST_CASE("Im2Col and Col2Im on the GPU match the CPU") {
  std::mt19937_64 rng(1);
  const int64_t c = 5, s = 12, n = 3;
  std::vector<float> in = RandomVector<float>(c * n * s * s, 1, rng);
  std::vector<float> expected(9 * in.size()), got;
  Im2Col(in.data(), c, s, n, expected.data());
  REQUIRE_OK(cuda::kernels::Im2Col(in, c, s, n, &got));
  CHECK(got == expected);  // copies only: exact

  std::vector<float> cols = RandomVector<float>(9 * c * n * s * s, 1, rng);
  std::vector<float> back(in.size());
  Col2Im(cols.data(), c, s, n, back.data());
  REQUIRE_OK(cuda::kernels::Col2Im(cols, c, s, n, &got));
  CHECK(RelativeError(got, back) < kTolerance);
}

TEST_CASE("MaxPool2 and its gradient on the GPU match the CPU") {
  std::mt19937_64 rng(2);
  const int64_t c = 7, s = 8, n = 4;
  std::vector<float> in = RandomVector<float>(c * n * s * s, 1, rng);
  std::vector<float> expected(in.size() / 4), got;
  std::vector<uint8_t> window(expected.size()), got_window;
  MaxPool2(in.data(), c, s, n, expected.data(), window.data());
  REQUIRE_OK(cuda::kernels::MaxPool2(in, c, s, n, &got, &got_window));
  CHECK(got == expected);
  CHECK(got_window == window);

  std::vector<float> dout = RandomVector<float>(static_cast<int64_t>(expected.size()), 1, rng);
  std::vector<float> din(in.size());
  MaxPool2Backward(dout.data(), window.data(), c, s, n, din.data());
  REQUIRE_OK(cuda::kernels::MaxPool2Backward(dout, window, c, s, n, &got));
  CHECK(got == din);
}

TEST_CASE("Bias, ReLU and softmax cross-entropy on the GPU match the CPU") {
  std::mt19937_64 rng(3);
  const int64_t rows = 10, cols = 33;
  std::vector<float> a = RandomVector<float>(rows * cols, 2, rng);
  std::vector<float> bias = RandomVector<float>(rows, 1, rng);
  for (bool relu : {false, true}) {
    std::vector<float> expected = a;
    for (int64_t i = 0; i < rows * cols; ++i) {
      float v = expected[static_cast<size_t>(i)] + bias[static_cast<size_t>(i % rows)];
      expected[static_cast<size_t>(i)] = relu ? std::max(v, 0.0f) : v;
    }
    std::vector<float> got = a;
    REQUIRE_OK(cuda::kernels::AddBias(&got, bias, relu));
    CHECK(RelativeError(got, expected) < kTolerance);
  }

  std::vector<float> delta = RandomVector<float>(rows * cols, 1, rng);
  std::vector<float> masked = delta;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!(a[i] > 0)) masked[i] = 0;
  }
  REQUIRE_OK(cuda::kernels::ReluBackward(a, &delta));
  CHECK(delta == masked);

  std::uniform_int_distribution<int32_t> label(0, rows - 1);
  std::vector<int32_t> y(static_cast<size_t>(cols));
  for (int32_t& v : y) v = label(rng);
  const float scale = 1.0f / cols;
  std::vector<float> expected_delta(a.size()), got_delta;
  const double expected_loss =
      SoftmaxCrossEntropy(a.data(), rows, cols, y.data(), scale, expected_delta.data(), nullptr);
  double got_loss = 0;
  REQUIRE_OK(cuda::kernels::SoftmaxCrossEntropy(a, rows, y, scale, &got_loss, &got_delta));
  CHECK(std::abs(got_loss - expected_loss) < kTolerance * std::abs(expected_loss));
  CHECK(RelativeError(got_delta, expected_delta) < kTolerance);
}

TEST_CASE("Every model's loss and gradient on the GPU match the CPU backend") {
  Result<Device> gpu = ParseDevice("cuda:0");
  REQUIRE(gpu.ok());
  for (const char* text : {"softmax", "mlp:64", "mlp:64,32", "cnn:8,16,32", "cnn:4,8"}) {
    Result<ModelSpec> spec = ParseModelSpec(text, 784, 10);
    REQUIRE(spec.ok());
    INFO(spec->Name());
    Result<std::unique_ptr<Backend>> cpu = MakeBackend(*spec, Device{});
    Result<std::unique_ptr<Backend>> cuda = MakeBackend(*spec, *gpu);
    REQUIRE(cpu.ok());
    REQUIRE_MESSAGE(cuda.ok(), cuda.status().message());
    std::vector<float> params(static_cast<size_t>(spec->NumParams()));
    Model(*spec).Initialize(5, params);
    std::mt19937_64 rng(6);
    // Batches below, at and above the CPU CNN's slice, and a second call of
    // a smaller size after a larger one (buffers reused).
    for (int64_t n : {1, 37, 128, 300, 64}) {
      INFO("batch ", n);
      Eigen::MatrixXf x(spec->input_dim, n);
      std::uniform_real_distribution<float> pixel(0, 1);
      for (int64_t i = 0; i < x.size(); ++i) x.data()[i] = pixel(rng);
      std::vector<int32_t> y(static_cast<size_t>(n));
      std::uniform_int_distribution<int32_t> label(0, 9);
      for (int32_t& v : y) v = label(rng);
      std::vector<float> expected(params.size()), got(params.size());
      Result<double> cpu_loss = (*cpu)->LossAndGradient(params, x, y, expected);
      REQUIRE_OK((*cuda)->PinHostBuffer(got));
      Result<double> gpu_loss = (*cuda)->LossAndGradient(params, x, y, got);
      (*cuda)->UnpinHostBuffer(got);
      REQUIRE(cpu_loss.ok());
      REQUIRE_MESSAGE(gpu_loss.ok(), gpu_loss.status().message());
      CHECK(std::abs(*gpu_loss - *cpu_loss) < kTolerance * std::abs(*cpu_loss));
      CHECK(RelativeError(got, expected) < kTolerance);
    }
  }
}

TEST_CASE("A device that does not exist is Unavailable") {
  Result<Device> far = ParseDevice("cuda:1023");
  REQUIRE(far.ok());
  Result<DeviceMemory> memory = ProbeDevice(*far);
  REQUIRE_FALSE(memory.ok());
  CHECK(memory.status().code() == StatusCode::kUnavailable);
  Result<std::unique_ptr<Backend>> backend = MakeBackend(*ParseModelSpec("softmax", 784, 10), *far);
  CHECK_FALSE(backend.ok());
}

}  // namespace dmlps::model

int main(int argc, char** argv) {
  std::string description;
  dmlps::Result<dmlps::model::DeviceMemory> memory = dmlps::model::ProbeDevice(
      dmlps::model::Device{dmlps::model::Device::Kind::kCuda, 0}, &description);
  if (!memory.ok()) {
    std::printf("skipped: %s\n", memory.status().message().c_str());
    return 77;
  }
  std::printf("GPU tests on %s, %.2f GiB free\n", description.c_str(),
              static_cast<double>(memory->free_bytes) / (1 << 30));
  doctest::Context context(argc, argv);
  return context.run();
}
