#include "dmlps/optim/optimizer.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>

#include "dmlps/base/flush_denormals.h"
#include "dmlps/optim/rules.h"
#include "dmlps/optim/settings.h"

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

// Takes a momentum saved by State(), one float per parameter, into
// `velocity`; InvalidArgument when it holds another number of floats.
Status RestoreVelocity(std::span<const float> state, std::vector<float>* velocity) {
  if (state.size() != velocity->size()) {
    return Status::InvalidArgument("momentum state of " + std::to_string(state.size()) +
                                   " floats for " + std::to_string(velocity->size()) +
                                   " parameters");
  }
  velocity->assign(state.begin(), state.end());
  return Status::Ok();
}

}  // namespace

bool Sgd::StepStaysFinite(std::span<const float> params, std::span<const float> grad,
                          const StepInfo& step, int64_t offset) const {
  const float scale = step.scale;
  const auto n = static_cast<Eigen::Index>(params.size());
  if (mu_ == 0) {
    return AllFinite(ConstVec(params.data(), n) - (lr_ * scale) * ConstVec(grad.data(), n));
  }
  const FlushDenormals flush;
  // A velocity that overflows makes the parameter it moves infinite or NaN
  // (lr > 0), so checking the parameters checks the velocity too.
  const ConstVec u(velocity_.data() + offset, n);
  const ConstVec g(grad.data(), n);
  if (nesterov_) {
    return AllFinite(ConstVec(params.data(), n) - lr_ * (scale * g + mu_ * (mu_ * u + scale * g)));
  }
  return AllFinite(ConstVec(params.data(), n) - lr_ * (mu_ * u + scale * g));
}

bool AccumulatedStaysFinite(const Optimizer* optimizer, const StepInfo& step,
                            std::span<const float> params, std::span<const float> acc,
                            int64_t offset) {
  const float scale = step.scale;
  if (optimizer != nullptr) return optimizer->StepStaysFinite(params, acc, step, offset);
  const auto n = static_cast<Eigen::Index>(params.size());
  return AllFinite(ConstVec(params.data(), n) + scale * ConstVec(acc.data(), n));
}

bool Optimizer::StepOutOfPlace(std::span<const float> /*params*/, std::span<float> /*grad*/,
                               const StepInfo& /*step*/, int64_t /*offset*/,
                               std::span<float> /*out*/) const {
  return false;  // not offered: StepsOutOfPlace() is false
}

bool Sgd::StepOutOfPlace(std::span<const float> params, std::span<float> grad, const StepInfo& step,
                         int64_t offset, std::span<float> out) const {
  const float scale = step.scale;
  const auto n = static_cast<Eigen::Index>(params.size());
  const ConstVec theta(params.data(), n);
  Vec g(grad.data(), n);
  Vec next(out.data(), n);
  if (mu_ == 0) {
    next = theta - (lr_ * scale) * g;
    return AllFinite(next);
  }
  const FlushDenormals flush;
  const ConstVec u(velocity_.data() + offset, n);
  // The same operations as StepSlice, in the same order; the new velocity
  // goes where the gradient was, once the step no longer needs it.
  if (nesterov_) {
    next = theta - lr_ * (scale * g + mu_ * (mu_ * u + scale * g));
    g = mu_ * u + scale * g;
  } else {
    g = mu_ * u + scale * g;
    next = theta - lr_ * g;
  }
  // A velocity that overflows makes the parameter it moves infinite or NaN
  // (lr > 0), as StepStaysFinite argues.
  return AllFinite(next);
}

void Sgd::TakeSlice(std::span<const float> state, int64_t offset) {
  std::copy(state.begin(), state.end(), velocity_.begin() + offset);
}

bool StepsOutOfPlace(const Optimizer* optimizer) {
  return optimizer == nullptr || optimizer->StepsOutOfPlace();
}

bool StepAccumulatedOutOfPlace(const Optimizer* optimizer, const StepInfo& step,
                               std::span<const float> params, std::span<float> acc,
                               std::span<float> out, int64_t offset) {
  const float scale = step.scale;
  const auto n = static_cast<Eigen::Index>(params.size());
  bool finite = false;
  if (optimizer != nullptr) {
    finite = optimizer->StepOutOfPlace(params, acc, step, offset, out);
  } else {
    Vec next(out.data(), n);
    next = ConstVec(params.data(), n) + scale * ConstVec(acc.data(), n);
    finite = AllFinite(next);
  }
  // Without state to carry, the sum is spent: zeroed while it is at hand.
  if (optimizer == nullptr || !optimizer->KeepsState()) std::fill(acc.begin(), acc.end(), 0.f);
  return finite;
}

void TakeAccumulated(Optimizer* optimizer, std::span<float> acc, int64_t offset) {
  if (optimizer == nullptr || !optimizer->KeepsState()) return;  // acc is zero already
  optimizer->TakeSlice(acc, offset);
  std::fill(acc.begin(), acc.end(), 0.f);
}

void Sgd::StepSlice(std::span<float> params, std::span<const float> grad, const StepInfo& step,
                    int64_t offset) {
  const float scale = step.scale;
  const auto n = static_cast<Eigen::Index>(params.size());
  Vec theta(params.data(), n);
  if (mu_ == 0) {
    theta -= (lr_ * scale) * ConstVec(grad.data(), n);
    return;
  }
  const FlushDenormals flush;
  Vec u(velocity_.data() + offset, n);
  u = mu_ * u + scale * ConstVec(grad.data(), n);
  if (nesterov_) {
    theta -= lr_ * (scale * ConstVec(grad.data(), n) + mu_ * u);
  } else {
    theta -= lr_ * u;
  }
}

void ApplyAccumulated(Optimizer* optimizer, const StepInfo& step, std::span<float> params,
                      std::span<float> acc, int64_t offset) {
  const float scale = step.scale;
  const auto n = static_cast<Eigen::Index>(params.size());
  if (optimizer != nullptr) {
    optimizer->StepSlice(params, acc, step, offset);
  } else {
    Vec(params.data(), n) += scale * ConstVec(acc.data(), n);
  }
  std::fill(acc.begin(), acc.end(), 0.f);
}

void LocalMomentumStep(std::span<float> params, std::span<float> velocity,
                       std::span<const float> grad, float lr, float mu) {
  const FlushDenormals flush;
  const auto n = static_cast<Eigen::Index>(params.size());
  Vec v(velocity.data(), n);
  v = mu * v + ConstVec(grad.data(), n);
  Vec(params.data(), n) -= lr * v;
}

Result<std::unique_ptr<Optimizer>> MakeOptimizer(double lr, double momentum, int64_t size) {
  return MakeOptimizer(lr, momentum, false, size);
}

Result<std::unique_ptr<Optimizer>> MakeOptimizer(double lr, double momentum, bool nesterov,
                                                 int64_t size) {
  return MakeOptimizer(lr, momentum, nesterov, 1, size);
}

Result<std::unique_ptr<Optimizer>> MakeOptimizer(double lr, double momentum, bool nesterov,
                                                 int64_t momentum_every, int64_t size) {
  if (!(lr > 0) || !std::isfinite(lr)) {
    return Status::InvalidArgument("learning rate must be a positive number");
  }
  if (!(momentum >= 0 && momentum < 1)) {
    return Status::InvalidArgument("momentum must be in [0, 1)");
  }
  if (momentum_every < 1) return Status::InvalidArgument("momentum every 0 steps");
  if (momentum_every > 1 && momentum > 0) {
    return std::unique_ptr<Optimizer>(new DelayedMomentum(
        static_cast<float>(lr), static_cast<float>(momentum), nesterov, momentum_every, size));
  }
  return std::unique_ptr<Optimizer>(
      new Sgd(static_cast<float>(lr), static_cast<float>(momentum), size, nesterov));
}

std::string Sgd::Name() const {
  if (mu_ == 0) return "sgd";
  return nesterov_ ? "nesterov" : "momentum";
}

Status Sgd::SetState(std::span<const float> state) {
  if (mu_ == 0) return Optimizer::SetState(state);  // no state to restore
  return RestoreVelocity(state, &velocity_);
}

void DelayedMomentum::StepSlice(std::span<float> params, std::span<const float> grad,
                                const StepInfo& step, int64_t offset) {
  const float scale = step.scale;
  const FlushDenormals flush;
  const auto n = static_cast<Eigen::Index>(params.size());
  Vec theta(params.data(), n);
  const ConstVec g(grad.data(), n);
  Vec delta(buffer_.data() + offset, n);
  theta -= (lr_ * scale) * g;
  delta += scale * g;
  if (MomentumDue(offset)) {
    Vec m(velocity_.data() + offset, n);
    if (nesterov_) {
      m = mu_ * m + delta;
      theta -= (lr_ * mu_) * m;
    } else {
      theta -= (lr_ * mu_) * m;
      m = mu_ * m + delta;
    }
    delta.setZero();
  }
  for (Eigen::Index i = 0; i < n; ++i) ++steps_[static_cast<size_t>(offset + i)];
}

bool DelayedMomentum::StepStaysFinite(std::span<const float> params, std::span<const float> grad,
                                      const StepInfo& step, int64_t offset) const {
  const float scale = step.scale;
  const FlushDenormals flush;
  const auto n = static_cast<Eigen::Index>(params.size());
  const ConstVec theta(params.data(), n);
  const ConstVec g(grad.data(), n);
  if (!MomentumDue(offset)) {
    // The buffer is checked when the momentum takes it.
    return AllFinite(theta - (lr_ * scale) * g);
  }
  const ConstVec m(velocity_.data() + offset, n);
  const ConstVec delta(buffer_.data() + offset, n);
  if (nesterov_) {
    return AllFinite(theta - (lr_ * scale) * g - (lr_ * mu_) * (mu_ * m + delta + scale * g));
  }
  return AllFinite(theta - (lr_ * scale) * g - (lr_ * mu_) * m) &&
         AllFinite(mu_ * m + delta + scale * g);
}

Status DelayedMomentum::SetState(std::span<const float> state) {
  DMLPS_RETURN_IF_ERROR(RestoreVelocity(state, &velocity_));
  std::fill(buffer_.begin(), buffer_.end(), 0.f);
  std::fill(steps_.begin(), steps_.end(), 0);
  return Status::Ok();
}

Result<std::unique_ptr<Optimizer>> MakeOptimizer(const OptimizerSettings& settings,
                                                 std::span<const model::TensorSpec> layout,
                                                 int64_t begin, int64_t end) {
  if (settings.Plain()) {
    return MakeOptimizer(settings.lr, settings.momentum, settings.nesterov, settings.momentum_every,
                         end - begin);
  }
  if (const std::vector<std::string> problems = SettingsProblems(settings); !problems.empty()) {
    return Status::InvalidArgument(problems.front());
  }
  DMLPS_ASSIGN_OR_RETURN(Schedule schedule, ParseSchedule(settings.schedule, settings.warmup));
  DMLPS_ASSIGN_OR_RETURN(std::vector<GroupRange> groups,
                         ResolveGroups(settings, layout, begin, end));
  std::unique_ptr<Optimizer> optimizer;
  if (settings.algorithm == "sgd") {
    optimizer = std::make_unique<TorchSgd>(std::move(groups), settings.momentum, settings.dampening,
                                           settings.nesterov);
  } else {
    optimizer = std::make_unique<Adam>(std::move(groups), settings.algorithm == "adamw",
                                       settings.beta1, settings.beta2, settings.eps);
  }
  optimizer->set_schedule(std::move(schedule));
  return optimizer;
}

}  // namespace dmlps::optim
