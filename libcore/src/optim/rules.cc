#include "dmlps/optim/rules.h"

#include <array>
#include <cmath>

#include "dmlps/base/flush_denormals.h"

namespace dmlps::optim {

GroupedOptimizer::GroupedOptimizer(std::vector<GroupRange> groups, size_t state_arrays)
    : groups_(std::move(groups)),
      state_(state_arrays, std::vector<float>(static_cast<size_t>(size()), 0.f)) {}

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

void GroupedOptimizer::StepSlice(std::span<float> params, std::span<const float> grad,
                                 const StepInfo& step, int64_t offset) {
  const FlushDenormals flush;
  ForEachGroup(offset, static_cast<int64_t>(params.size()),
               [&](const GroupRange& group, int64_t first, int64_t count) {
                 std::array<float*, kMaxStateArrays> out{};
                 std::array<const float*, kMaxStateArrays> in{};
                 for (size_t k = 0; k < state_.size(); ++k) {
                   out[k] = state_[k].data() + offset + first;
                   in[k] = out[k];
                 }
                 Run({.params = params.data() + first,
                      .grad = grad.data() + first,
                      .state_in = {in.data(), state_.size()},
                      .state_out = {out.data(), state_.size()},
                      .out = params.data() + first,
                      .n = count},
                     group, step);
               });
}

bool GroupedOptimizer::StepStaysFinite(std::span<const float> params, std::span<const float> grad,
                                       const StepInfo& step, int64_t offset) const {
  const FlushDenormals flush;
  bool finite = true;
  // A state that overflows makes the parameter it moves infinite or NaN, or
  // the rule checks it.
  ForEachGroup(offset, static_cast<int64_t>(params.size()),
               [&](const GroupRange& group, int64_t first, int64_t count) {
                 const std::array<float*, kMaxStateArrays> none{};
                 std::array<const float*, kMaxStateArrays> in{};
                 for (size_t k = 0; k < state_.size(); ++k) {
                   in[k] = state_[k].data() + offset + first;
                 }
                 finite = Run({.params = params.data() + first,
                               .grad = grad.data() + first,
                               .state_in = {in.data(), state_.size()},
                               .state_out = {none.data(), state_.size()},
                               .out = nullptr,
                               .n = count},
                              group, step) &&
                          finite;
               });
  return finite;
}

std::vector<float> GroupedOptimizer::State() const {
  std::vector<float> state;
  state.reserve(StateFloats());
  for (const std::vector<float>& array : state_) {
    state.insert(state.end(), array.begin(), array.end());
  }
  return state;
}

Status GroupedOptimizer::SetState(std::span<const float> state) {
  if (state.size() != StateFloats()) {
    return Status::InvalidArgument(Name() + " state of " + std::to_string(state.size()) +
                                   " floats, expected " + std::to_string(StateFloats()));
  }
  for (size_t k = 0; k < state_.size(); ++k) {
    const std::span<const float> array = state.subspan(k * state_[k].size(), state_[k].size());
    state_[k].assign(array.begin(), array.end());
  }
  return Status::Ok();
}

TorchSgd::TorchSgd(std::vector<GroupRange> groups, double momentum, double dampening, bool nesterov)
    : GroupedOptimizer(std::move(groups), static_cast<float>(momentum) > 0 ? 1 : 0),
      mu_(static_cast<float>(momentum)),
      dampening_(static_cast<float>(dampening)),
      nesterov_(nesterov) {}

std::string TorchSgd::Name() const {
  if (mu_ == 0) return "sgd";
  return nesterov_ ? "nesterov" : "momentum";
}

bool TorchSgd::Run(const RunSpans& run, const GroupRange& group, const StepInfo& step) const {
  const float* params = run.params;
  const float* grad = run.grad;
  float* out = run.out;
  // With momentum, the buffer: b.
  const float* buffer_in = run.state_in.empty() ? nullptr : run.state_in[0];
  float* buffer_out = run.state_out.empty() ? nullptr : run.state_out[0];
  // The same operations in the same order as torch.optim.SGD, in float.
  const auto lr = static_cast<float>(group.lr * step.lr_factor);
  const auto decay = static_cast<float>(group.weight_decay);
  const float scale = step.scale;
  const float keep = 1.f - dampening_;
  const bool first = step.number <= 1;
  bool finite = true;
  for (int64_t i = 0; i < run.n; ++i) {
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

Adam::Adam(std::vector<GroupRange> groups, bool decoupled, double beta1, double beta2, double eps)
    : GroupedOptimizer(std::move(groups), 2),
      decoupled_(decoupled),
      beta1_(beta1),
      beta2_(beta2),
      eps_(static_cast<float>(eps)) {}

bool Adam::Run(const RunSpans& run, const GroupRange& group, const StepInfo& step) const {
  const float* params = run.params;
  const float* grad = run.grad;
  float* out = run.out;
  const float* m_in = run.state_in[0];
  const float* v_in = run.state_in[1];
  float* m_out = run.state_out[0];
  float* v_out = run.state_out[1];
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
  for (int64_t i = 0; i < run.n; ++i) {
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

Status Adam::SetState(std::span<const float> state) {
  if (state.size() != StateFloats()) {
    return Status::InvalidArgument(Name() + " state of " + std::to_string(state.size()) +
                                   " floats, expected " + std::to_string(StateFloats()) +
                                   " (m and v per parameter)");
  }
  for (size_t i = 0; i < state.size() / 2; ++i) {
    if (state[state.size() / 2 + i] < 0) {
      return Status::InvalidArgument(Name() + " state holds a negative second moment");
    }
  }
  return GroupedOptimizer::SetState(state);
}

}  // namespace dmlps::optim
