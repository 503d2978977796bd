#include "dmlps/optim/rules.h"

#include <cmath>

#include "dmlps/base/flush_denormals.h"

namespace dmlps::optim {

void GroupedOptimizer::ForEachGroup(
    int64_t offset, int64_t n,
    const std::function<void(const GroupRange&, int64_t, int64_t)>& visit) const {
  const int64_t end = offset + n;
  for (const GroupRange& group : groups_) {
    if (group.end <= offset) continue;
    if (group.begin >= end) break;
    const int64_t from = std::max(group.begin, offset);
    const int64_t to = std::min(group.end, end);
    visit(group, from - offset, to - from);
  }
}

TorchSgd::TorchSgd(std::vector<GroupRange> groups, double momentum, double dampening, bool nesterov)
    : GroupedOptimizer(std::move(groups)),
      mu_(static_cast<float>(momentum)),
      dampening_(static_cast<float>(dampening)),
      nesterov_(nesterov) {
  if (mu_ > 0) buffer_.assign(static_cast<size_t>(size()), 0.f);
}

std::string TorchSgd::Name() const {
  if (mu_ == 0) return "sgd";
  return nesterov_ ? "nesterov" : "momentum";
}

bool TorchSgd::Run(const float* params, const float* grad, const float* buffer_in,
                   float* buffer_out, float* out, int64_t n, const GroupRange& group,
                   const StepInfo& step) const {
  // The same operations in the same order as torch.optim.SGD, in float.
  const auto lr = static_cast<float>(group.lr * step.lr_factor);
  const auto decay = static_cast<float>(group.weight_decay);
  const float scale = step.scale;
  const float keep = 1.f - dampening_;
  const bool first = step.number <= 1;
  bool finite = true;
  for (int64_t i = 0; i < n; ++i) {
    float d = scale * grad[i];
    if (decay != 0) d = d + decay * params[i];
    if (mu_ > 0) {
      const float b = first ? d : buffer_in[i] * mu_ + keep * d;
      if (buffer_out != nullptr) buffer_out[i] = b;
      d = nesterov_ ? d + mu_ * b : b;
    }
    const float theta = params[i] + (-lr) * d;
    finite = finite && std::isfinite(theta);
    if (out != nullptr) out[i] = theta;
  }
  return finite;
}

void TorchSgd::StepSlice(std::span<float> params, std::span<const float> grad, const StepInfo& step,
                         int64_t offset) {
  const FlushDenormals flush;
  ForEachGroup(offset, static_cast<int64_t>(params.size()),
               [&](const GroupRange& group, int64_t first, int64_t count) {
                 float* buffer = mu_ > 0 ? buffer_.data() + offset + first : nullptr;
                 Run(params.data() + first, grad.data() + first, buffer, buffer,
                     params.data() + first, count, group, step);
               });
}

bool TorchSgd::StepStaysFinite(std::span<const float> params, std::span<const float> grad,
                               const StepInfo& step, int64_t offset) const {
  const FlushDenormals flush;
  bool finite = true;
  // A momentum that overflows makes the parameter it moves infinite or NaN.
  ForEachGroup(offset, static_cast<int64_t>(params.size()),
               [&](const GroupRange& group, int64_t first, int64_t count) {
                 const float* buffer = mu_ > 0 ? buffer_.data() + offset + first : nullptr;
                 finite = Run(params.data() + first, grad.data() + first, buffer, nullptr, nullptr,
                              count, group, step) &&
                          finite;
               });
  return finite;
}

Status TorchSgd::SetState(std::span<const float> state) {
  if (state.size() != buffer_.size()) {
    return Status::InvalidArgument(Name() + " state of " + std::to_string(state.size()) +
                                   " floats, expected " + std::to_string(buffer_.size()));
  }
  buffer_.assign(state.begin(), state.end());
  return Status::Ok();
}

Adam::Adam(std::vector<GroupRange> groups, bool decoupled, double beta1, double beta2, double eps)
    : GroupedOptimizer(std::move(groups)),
      decoupled_(decoupled),
      beta1_(beta1),
      beta2_(beta2),
      eps_(static_cast<float>(eps)),
      m_(static_cast<size_t>(size()), 0.f),
      v_(static_cast<size_t>(size()), 0.f) {}

bool Adam::Run(const float* params, const float* grad, const float* m_in, const float* v_in,
               float* m_out, float* v_out, float* out, int64_t n, const GroupRange& group,
               const StepInfo& step) const {
  // torch.optim.Adam(W)'s single-tensor step: its scalars in double, as
  // Python computes them, each converted to float where it meets a tensor.
  const double lr = group.lr * step.lr_factor;
  const auto t = static_cast<double>(std::max<int64_t>(step.number, 1));
  const double correction1 = 1 - std::pow(beta1_, t);
  const auto correction2_sqrt = static_cast<float>(std::sqrt(1 - std::pow(beta2_, t)));
  const auto step_size = static_cast<float>(lr / correction1);
  const auto shrink = static_cast<float>(1 - lr * group.weight_decay);
  const auto decay = static_cast<float>(group.weight_decay);
  const auto b1 = static_cast<float>(beta1_);
  const auto b2 = static_cast<float>(beta2_);
  const auto keep1 = static_cast<float>(1 - beta1_);
  const auto keep2 = static_cast<float>(1 - beta2_);
  const float scale = step.scale;
  bool finite = true;
  for (int64_t i = 0; i < n; ++i) {
    float g = scale * grad[i];
    float theta = params[i];
    if (decoupled_) {
      if (decay != 0) theta = theta * shrink;
    } else if (decay != 0) {
      g = g + decay * theta;
    }
    const float m = m_in[i] * b1 + keep1 * g;
    const float v = v_in[i] * b2 + keep2 * g * g;
    const float denom = std::sqrt(v) / correction2_sqrt + eps_;
    theta = theta + (-step_size) * m / denom;
    finite = finite && std::isfinite(theta) && std::isfinite(v);
    if (m_out != nullptr) {
      m_out[i] = m;
      v_out[i] = v;
    }
    if (out != nullptr) out[i] = theta;
  }
  return finite;
}

void Adam::StepSlice(std::span<float> params, std::span<const float> grad, const StepInfo& step,
                     int64_t offset) {
  const FlushDenormals flush;
  ForEachGroup(offset, static_cast<int64_t>(params.size()),
               [&](const GroupRange& group, int64_t first, int64_t count) {
                 float* m = m_.data() + offset + first;
                 float* v = v_.data() + offset + first;
                 Run(params.data() + first, grad.data() + first, m, v, m, v, params.data() + first,
                     count, group, step);
               });
}

bool Adam::StepStaysFinite(std::span<const float> params, std::span<const float> grad,
                           const StepInfo& step, int64_t offset) const {
  const FlushDenormals flush;
  bool finite = true;
  ForEachGroup(offset, static_cast<int64_t>(params.size()),
               [&](const GroupRange& group, int64_t first, int64_t count) {
                 finite = Run(params.data() + first, grad.data() + first,
                              m_.data() + offset + first, v_.data() + offset + first, nullptr,
                              nullptr, nullptr, count, group, step) &&
                          finite;
               });
  return finite;
}

std::vector<float> Adam::State() const {
  std::vector<float> state(m_);
  state.insert(state.end(), v_.begin(), v_.end());
  return state;
}

Status Adam::SetState(std::span<const float> state) {
  if (state.size() != 2 * m_.size()) {
    return Status::InvalidArgument(Name() + " state of " + std::to_string(state.size()) +
                                   " floats, expected " + std::to_string(2 * m_.size()) +
                                   " (m and v per parameter)");
  }
  for (size_t i = 0; i < state.size() / 2; ++i) {
    if (state[state.size() / 2 + i] < 0) {
      return Status::InvalidArgument(Name() + " state holds a negative second moment");
    }
  }
  m_.assign(state.begin(), state.begin() + static_cast<std::ptrdiff_t>(m_.size()));
  v_.assign(state.begin() + static_cast<std::ptrdiff_t>(m_.size()), state.end());
  return Status::Ok();
}

}  // namespace dmlps::optim
