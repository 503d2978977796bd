// What the overhead benchmarks measure against: one gradient computation of
// the default job, mlp:128 on Fashion-MNIST-sized input, and a clock.
#ifndef DMLPS_BENCH_GRADIENT_JOB_H_
#define DMLPS_BENCH_GRADIENT_JOB_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "dmlps/model/model.h"

namespace dmlps::bench {

using Clock = std::chrono::steady_clock;

// Seconds from `since` to now.
inline double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// A model with parameters, a batch of inputs and labels, and a gradient
// buffer: everything one training step computes on.
struct GradientJob {
  GradientJob(const model::ModelSpec& spec, int64_t batch)
      : model(spec), params(model.num_params()), grad(model.num_params()), y(batch) {
    model.Initialize(1, params);
    x = Eigen::MatrixXf::Random(spec.input_dim, batch).cwiseAbs();
    for (int64_t i = 0; i < batch; ++i) y[i] = static_cast<int32_t>(i % spec.classes);
  }
  // One gradient computation, the unit the overheads are measured in.
  void Step() { model.LossAndGradient(params, x, y, grad); }

  model::Model model;
  std::vector<float> params;
  std::vector<float> grad;
  Eigen::MatrixXf x;
  std::vector<int32_t> y;
};

// The default job with `batch` samples; nullptr if its model does not parse.
inline std::unique_ptr<GradientJob> DefaultGradientJob(int64_t batch) {
  Result<model::ModelSpec> spec = model::ParseModelSpec("mlp:128", 784, 10);
  if (!spec.ok()) return nullptr;
  return std::make_unique<GradientJob>(*spec, batch);
}

}  // namespace dmlps::bench

#endif  // DMLPS_BENCH_GRADIENT_JOB_H_
