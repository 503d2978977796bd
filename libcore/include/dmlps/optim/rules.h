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

// What both rules share: the groups over the flat vector, the state the
// rule keeps (arrays of one float per parameter), and a step walked over
// the groups a slice crosses, each run of it stepped by the rule's Run.
class GroupedOptimizer : public Optimizer {
 public:
  void StepSlice(std::span<float> params, std::span<const float> grad, const StepInfo& step,
                 int64_t offset) override;
  bool StepStaysFinite(std::span<const float> params, std::span<const float> grad,
                       const StepInfo& step, int64_t offset) const override;
  bool KeepsState() const override { return !state_.empty(); }
  // The state arrays, one after the other.
  std::vector<float> State() const override;
  // Takes the state arrays from a State() saved earlier; InvalidArgument
  // when it holds another number of floats.
  Status SetState(std::span<const float> state) override;

 protected:
  static constexpr size_t kMaxStateArrays = 2;
  // One group's run of `n` parameters, as the rule's Run steps it: it reads
  // params, grad and each state array's values at state_in[k], and writes θ
  // into `out` (may be params) and the state into state_out[k] (may be
  // state_in[k]), each only when not null: null, the step is only checked.
  struct RunSpans {
    const float* params;
    const float* grad;
    std::span<const float* const> state_in;
    std::span<float* const> state_out;
    float* out;
    int64_t n;
  };
  // REQUIRES: groups cover [0, size) in order; state_arrays <= kMaxStateArrays.
  GroupedOptimizer(std::vector<GroupRange> groups, size_t state_arrays);
  // The rule's step over one run of `group`; returns whether all it checks
  // is finite.
  virtual bool Run(const RunSpans& run, const GroupRange& group, const StepInfo& step) const = 0;
  int64_t size() const { return groups_.empty() ? 0 : groups_.back().end; }
  // Floats of state in all, laid out as State() lays them.
  size_t StateFloats() const { return state_.size() * static_cast<size_t>(size()); }

 private:
  // Calls visit(group, first, count) for each run of the slice of `n`
  // parameters at `offset` that lies in one group: `first` counts from the
  // slice's start.
  void ForEachGroup(int64_t offset, int64_t n,
                    const std::function<void(const GroupRange&, int64_t, int64_t)>& visit) const;

  std::vector<GroupRange> groups_;
  std::vector<std::vector<float>> state_;  // each of size() floats
};

// torch.optim.SGD: d = g + wd θ; with momentum, b = d on the first step and
// b = μ b + (1 − dampening) d after, then d = d + μ b (Nesterov) or d = b;
// θ = θ − lr d.
class TorchSgd : public GroupedOptimizer {
 public:
  // With momentum, its state is the momentum buffer; without, none.
  TorchSgd(std::vector<GroupRange> groups, double momentum, double dampening, bool nesterov);
  std::string Name() const override;

 private:
  bool Run(const RunSpans& run, const GroupRange& group, const StepInfo& step) const override;

  float mu_;
  float dampening_;
  bool nesterov_;
};

// torch.optim.Adam (weight decay added to the gradient) and AdamW (decoupled:
// θ = θ (1 − lr wd) first): m = β1 m + (1 − β1) g; v = β2 v + (1 − β2) g²;
// θ = θ − lr / (1 − β1^t) · m / (√v / √(1 − β2^t) + ε).
class Adam : public GroupedOptimizer {
 public:
  // Its state: m, then v (two floats per parameter).
  Adam(std::vector<GroupRange> groups, bool decoupled, double beta1, double beta2, double eps);
  std::string Name() const override { return decoupled_ ? "adamw" : "adam"; }
  // As GroupedOptimizer's, refusing a negative second moment too.
  Status SetState(std::span<const float> state) override;

 private:
  bool Run(const RunSpans& run, const GroupRange& group, const StepInfo& step) const override;

  bool decoupled_;
  double beta1_;
  double beta2_;
  float eps_;
};

}  // namespace dmlps::optim

#endif  // DMLPS_OPTIM_RULES_H_
