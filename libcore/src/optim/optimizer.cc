#include "dmlps/optim/optimizer.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>

namespace dmlps::optim {
namespace {

using Vec = Eigen::Map<Eigen::VectorXf>;
using ConstVec = Eigen::Map<const Eigen::VectorXf>;

// Whether every value of `values` is finite: Inf * 0 and NaN * 0 are NaN,
// and a NaN makes the sum NaN, so one vectorized pass with no branch tells.
template <typename Expr>
bool AllFinite(const Expr& values) {
  return (values.array() * 0.f).sum() == 0.f;
}

}  // namespace

bool Sgd::StepStaysFinite(std::span<const float> params, std::span<const float> grad, float scale,
                          int64_t /*offset*/) const {
  const auto n = static_cast<Eigen::Index>(params.size());
  return AllFinite(ConstVec(params.data(), n) - (lr_ * scale) * ConstVec(grad.data(), n));
}

bool Momentum::StepStaysFinite(std::span<const float> params, std::span<const float> grad,
                               float scale, int64_t offset) const {
  const auto n = static_cast<Eigen::Index>(params.size());
  // A velocity that overflows makes the parameter it moves infinite or NaN
  // (lr > 0), so checking the parameters checks the velocity too.
  const ConstVec u(velocity_.data() + offset, n);
  return AllFinite(ConstVec(params.data(), n) - lr_ * (mu_ * u + scale * ConstVec(grad.data(), n)));
}

bool AccumulatedStaysFinite(const Optimizer* optimizer, float scale, std::span<const float> params,
                            std::span<const float> acc, int64_t offset) {
  if (optimizer != nullptr) return optimizer->StepStaysFinite(params, acc, scale, offset);
  const auto n = static_cast<Eigen::Index>(params.size());
  return AllFinite(ConstVec(params.data(), n) + scale * ConstVec(acc.data(), n));
}

void Sgd::StepSlice(std::span<float> params, std::span<const float> grad, float scale,
                    int64_t /*offset*/) {
  Vec theta(params.data(), static_cast<Eigen::Index>(params.size()));
  theta -= (lr_ * scale) * ConstVec(grad.data(), static_cast<Eigen::Index>(grad.size()));
}

void Momentum::StepSlice(std::span<float> params, std::span<const float> grad, float scale,
                         int64_t offset) {
  const auto n = static_cast<Eigen::Index>(params.size());
  Vec theta(params.data(), n);
  Vec u(velocity_.data() + offset, n);
  u = mu_ * u + scale * ConstVec(grad.data(), n);
  theta -= lr_ * u;
}

void ApplyAccumulated(Optimizer* optimizer, float scale, std::span<float> params,
                      std::span<float> acc, int64_t offset) {
  const auto n = static_cast<Eigen::Index>(params.size());
  if (optimizer != nullptr) {
    optimizer->StepSlice(params, acc, scale, offset);
  } else {
    Vec(params.data(), n) += scale * ConstVec(acc.data(), n);
  }
  std::fill(acc.begin(), acc.end(), 0.f);
}

void LocalMomentumStep(std::span<float> params, std::span<float> velocity,
                       std::span<const float> grad, float lr, float mu) {
  const auto n = static_cast<Eigen::Index>(params.size());
  Vec v(velocity.data(), n);
  v = mu * v + ConstVec(grad.data(), n);
  Vec(params.data(), n) -= lr * v;
}

Result<std::unique_ptr<Optimizer>> MakeOptimizer(double lr, double momentum, int64_t size) {
  if (!(lr > 0) || !std::isfinite(lr)) {
    return Status::InvalidArgument("learning rate must be a positive number");
  }
  if (!(momentum >= 0 && momentum < 1)) {
    return Status::InvalidArgument("momentum must be in [0, 1)");
  }
  if (momentum == 0) return std::unique_ptr<Optimizer>(new Sgd(static_cast<float>(lr)));
  return std::unique_ptr<Optimizer>(
      new Momentum(static_cast<float>(lr), static_cast<float>(momentum), size));
}

Status Momentum::SetState(std::span<const float> state) {
  if (state.size() != velocity_.size()) {
    return Status::InvalidArgument("momentum state of " + std::to_string(state.size()) +
                                   " floats for " + std::to_string(velocity_.size()) +
                                   " parameters");
  }
  velocity_.assign(state.begin(), state.end());
  return Status::Ok();
}

}  // namespace dmlps::optim
