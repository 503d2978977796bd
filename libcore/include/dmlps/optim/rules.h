// torch.optim's update rules on the server, over parameter groups and
// under a learning-rate schedule: SGD (momentum, dampening, Nesterov,
// weight decay) and Adam/AdamW. Each step does, float for float, what
// torch.optim's single-tensor implementation does (PyTorch 1.13 and
// later), so a server fed the same gradients ends where torch.optim would.
#ifndef DMLPS_OPTIM_RULES_H_
#define DMLPS_OPTIM_RULES_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "dmlps/optim/optimizer.h"
#include "dmlps/optim/settings.h"

namespace dmlps::optim {

// What both rules share: the groups over the flat vector, and a walk over
// the groups a slice crosses.
class GroupedOptimizer : public Optimizer {
 protected:
  // REQUIRES: groups cover [0, size) in order.
  explicit GroupedOptimizer(std::vector<GroupRange> groups) : groups_(std::move(groups)) {}
  // Calls visit(group, first, count) for each run of the slice of `n`
  // parameters at `offset` that lies in one group: `first` counts from the
  // slice's start.
  void ForEachGroup(int64_t offset, int64_t n,
                    const std::function<void(const GroupRange&, int64_t, int64_t)>& visit) const;
  int64_t size() const { return groups_.empty() ? 0 : groups_.back().end; }

 private:
  std::vector<GroupRange> groups_;
};

// torch.optim.SGD: d = g + wd θ; with momentum, b = d on the first step and
// b = μ b + (1 − dampening) d after, then d = d + μ b (Nesterov) or d = b;
// θ = θ − lr d.
class TorchSgd : public GroupedOptimizer {
 public:
  TorchSgd(std::vector<GroupRange> groups, double momentum, double dampening, bool nesterov);
  void StepSlice(std::span<float> params, std::span<const float> grad, const StepInfo& step,
                 int64_t offset) override;
  bool StepStaysFinite(std::span<const float> params, std::span<const float> grad,
                       const StepInfo& step, int64_t offset) const override;
  bool KeepsState() const override { return mu_ > 0; }
  std::string Name() const override;
  std::vector<float> State() const override { return buffer_; }
  Status SetState(std::span<const float> state) override;

 private:
  // The step over one group's run; writes θ into `out` (may be params) and,
  // when `buffer` is set, the momentum into it. Returns whether all finite.
  bool Run(const float* params, const float* grad, const float* buffer_in, float* buffer_out,
           float* out, int64_t n, const GroupRange& group, const StepInfo& step) const;

  float mu_;
  float dampening_;
  bool nesterov_;
  std::vector<float> buffer_;  // one per parameter with momentum, else empty
};

// torch.optim.Adam (weight decay added to the gradient) and AdamW (decoupled:
// θ = θ (1 − lr wd) first): m = β1 m + (1 − β1) g; v = β2 v + (1 − β2) g²;
// θ = θ − lr / (1 − β1^t) · m / (√v / √(1 − β2^t) + ε).
class Adam : public GroupedOptimizer {
 public:
  Adam(std::vector<GroupRange> groups, bool decoupled, double beta1, double beta2, double eps);
  void StepSlice(std::span<float> params, std::span<const float> grad, const StepInfo& step,
                 int64_t offset) override;
  bool StepStaysFinite(std::span<const float> params, std::span<const float> grad,
                       const StepInfo& step, int64_t offset) const override;
  bool KeepsState() const override { return true; }
  std::string Name() const override { return decoupled_ ? "adamw" : "adam"; }
  // m then v: two floats per parameter.
  std::vector<float> State() const override;
  Status SetState(std::span<const float> state) override;

 private:
  bool Run(const float* params, const float* grad, const float* m_in, const float* v_in,
           float* m_out, float* v_out, float* out, int64_t n, const GroupRange& group,
           const StepInfo& step) const;

  bool decoupled_;
  double beta1_;
  double beta2_;
  float eps_;
  std::vector<float> m_;
  std::vector<float> v_;
};

}  // namespace dmlps::optim

#endif  // DMLPS_OPTIM_RULES_H_
