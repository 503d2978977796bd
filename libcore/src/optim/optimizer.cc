#include "dmlps/optim/optimizer.h"

#include <Eigen/Core>
#include <cmath>

namespace dmlps::optim {
namespace {

using Vec = Eigen::Map<Eigen::VectorXf>;
using ConstVec = Eigen::Map<const Eigen::VectorXf>;

}  // namespace

void Sgd::Step(std::span<float> params, std::span<const float> grad, float scale) {
  Vec theta(params.data(), static_cast<Eigen::Index>(params.size()));
  theta -= (lr_ * scale) * ConstVec(grad.data(), static_cast<Eigen::Index>(grad.size()));
}

void Momentum::Step(std::span<float> params, std::span<const float> grad, float scale) {
  const auto n = static_cast<Eigen::Index>(params.size());
  Vec theta(params.data(), n);
  Vec u(velocity_.data(), n);
  u = mu_ * u + scale * ConstVec(grad.data(), n);
  theta -= lr_ * u;
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

}  // namespace dmlps::optim
