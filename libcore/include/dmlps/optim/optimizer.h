// Server-side optimizers: how an aggregated gradient changes the model.
#ifndef DMLPS_OPTIM_OPTIMIZER_H_
#define DMLPS_OPTIM_OPTIMIZER_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/model/layout.h"
#include "dmlps/optim/schedule.h"

namespace dmlps::optim {

struct OptimizerSettings;

// What every slice of one step shares, fixed when the step begins
// (Optimizer::Begin): slices of a step may run after the next step began.
struct StepInfo {
  float scale = 1;       // the step goes along scale * grad
  int64_t number = 1;    // steps begun so far, this one included (torch.optim's `step`)
  double lr_factor = 1;  // the learning-rate schedule's factor at this step
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Begins the next step along scale * grad: counts it, and fixes the
  // schedule's factor for it. A step refused later (non-finite) still
  // counts, as a scheduler stepped past a skipped step does.
  StepInfo Begin(float scale) {
    ++steps_;
    return {scale, steps_, schedule_.Factor(steps_ - 1)};
  }
  // Steps begun so far (checkpoints keep it); set_steps goes on from a count saved.
  int64_t steps() const { return steps_; }
  void set_steps(int64_t steps) { steps_ = steps; }
  void set_schedule(Schedule schedule) { schedule_ = std::move(schedule); }
  // Changes `params` by one step along `scale * grad`.
  // REQUIRES: params and grad of the size the optimizer was made for.
  void Step(std::span<float> params, std::span<const float> grad, float scale) {
    StepSlice(params, grad, Begin(scale), 0);
  }
  // The same step on the slice of the model that starts at parameter
  // `offset` (`params` and `grad` hold that slice), with the optimizer's
  // state for those parameters: a model updated slice by slice, each slice
  // once per step, ends where Step would have taken it. Steps on disjoint
  // slices may run at the same time on different threads: a slice's step
  // touches only that slice's state. REQUIRES: the slice lies inside the
  // size the optimizer was made for.
  virtual void StepSlice(std::span<float> params, std::span<const float> grad, const StepInfo& step,
                         int64_t offset) = 0;
  // Whether StepSlice with the same arguments would leave every parameter
  // finite, computed without changing anything: the server checks a whole
  // step this way before taking any of it, so that a step that would
  // overflow is refused whole. Same REQUIRES as StepSlice.
  virtual bool StepStaysFinite(std::span<const float> params, std::span<const float> grad,
                               const StepInfo& step, int64_t offset) const = 0;
  // Whether StepOutOfPlace is offered (an optimizer that cannot say the
  // state it would leave in one float per parameter does not offer it).
  virtual bool StepsOutOfPlace() const { return false; }
  // The step StepSlice would take, computed out of place for a caller that
  // takes it only once the whole step is known to stay finite, so that
  // checking and computing the step cost one pass: writes the parameters
  // it would leave into `out` and, when KeepsState(), the state it would
  // leave into `grad` (overwritten; TakeSlice takes it); changes nothing of
  // its own. Returns whether every parameter written is finite, as
  // StepStaysFinite would. `out` ends bit for bit as StepSlice would leave
  // `params`. REQUIRES: StepsOutOfPlace(); StepSlice's REQUIRES; `out` of
  // params' size, apart from params and grad.
  virtual bool StepOutOfPlace(std::span<const float> params, std::span<float> grad,
                              const StepInfo& step, int64_t offset, std::span<float> out) const;
  // Whether the optimizer carries state from step to step (then
  // StepOutOfPlace leaves it in `grad` for TakeSlice).
  virtual bool KeepsState() const { return false; }
  // Takes the state that StepOutOfPlace of the slice at `offset` left in
  // `state`: the step is then taken. Steps on disjoint slices may be taken
  // at the same time, as StepSlice's.
  virtual void TakeSlice(std::span<const float> /*state*/, int64_t /*offset*/) {}
  virtual std::string Name() const = 0;
  // What the optimizer carries from step to step (for checkpoints): none,
  // one or two floats per parameter, as the rule keeps.
  virtual std::vector<float> State() const { return {}; }
  // Goes on from a State() saved earlier; InvalidArgument when it does not fit.
  virtual Status SetState(std::span<const float> state) {
    return state.empty() ? Status::Ok()
                         : Status::InvalidArgument(Name() + " keeps no state to restore");
  }

 private:
  Schedule schedule_;
  int64_t steps_ = 0;
};

// SGD as the server steps plainly: without momentum (0), θ ← θ − lr ·
// scale · g; with heavy-ball momentum μ > 0, u ← μ · u + scale · g; θ ← θ −
// lr · u; with `nesterov` too, Nesterov's form (as in PyTorch's SGD): θ ← θ −
// lr · (scale · g + μ · u), with u already updated (the outer optimizer of
// localsgd). Only the momentum keeps state: u, one float per parameter.
class Sgd : public Optimizer {
 public:
  // `size`: the model's parameter count, the momentum's.
  Sgd(float lr, float momentum, int64_t size, bool nesterov = false)
      : lr_(lr),
        mu_(momentum),
        nesterov_(nesterov),
        velocity_(momentum > 0 ? static_cast<size_t>(size) : 0, 0.f) {}
  void StepSlice(std::span<float> params, std::span<const float> grad, const StepInfo& step,
                 int64_t offset) override;
  bool StepStaysFinite(std::span<const float> params, std::span<const float> grad,
                       const StepInfo& step, int64_t offset) const override;
  bool StepsOutOfPlace() const override { return true; }
  bool StepOutOfPlace(std::span<const float> params, std::span<float> grad, const StepInfo& step,
                      int64_t offset, std::span<float> out) const override;
  bool KeepsState() const override { return mu_ > 0; }
  void TakeSlice(std::span<const float> state, int64_t offset) override;
  std::string Name() const override;
  std::vector<float> State() const override { return velocity_; }
  Status SetState(std::span<const float> state) override;

 private:
  float lr_;
  float mu_;
  bool nesterov_;
  std::vector<float> velocity_;  // empty without momentum
};

// Momentum applied once every `every` steps (the delayed Nesterov of Liu et
// al., "Asynchronous Local-SGD Training for Language Modeling", 2024): each
// step moves the model at once, θ ← θ − lr · scale · g, and adds scale · g to
// a buffer Δ; every `every`-th step then also takes the momentum's part,
// m ← μ · m + Δ; θ ← θ − lr · μ · m (Nesterov's; heavy-ball: with m before
// the update), and empties Δ. Over `every` steps the model moves as one
// Nesterov (or heavy-ball) step along Δ would move it, the gradient's part
// applied as the steps come. Each slice counts its own steps, so slices
// may step in parallel as Optimizer allows.
class DelayedMomentum : public Optimizer {
 public:
  // REQUIRES: every >= 1.
  DelayedMomentum(float lr, float momentum, bool nesterov, int64_t every, int64_t size)
      : lr_(lr),
        mu_(momentum),
        nesterov_(nesterov),
        every_(every),
        velocity_(size, 0.f),
        buffer_(size, 0.f),
        steps_(size, 0) {}
  void StepSlice(std::span<float> params, std::span<const float> grad, const StepInfo& step,
                 int64_t offset) override;
  bool StepStaysFinite(std::span<const float> params, std::span<const float> grad,
                       const StepInfo& step, int64_t offset) const override;
  std::string Name() const override { return nesterov_ ? "delayed-nesterov" : "delayed-momentum"; }
  // The momentum, one float per parameter as checkpoints keep it. A cycle in
  // progress is not kept: SetState starts a new one with an empty buffer
  // (the pushes in it have moved the model already, only their share of
  // the momentum is lost).
  std::vector<float> State() const override { return velocity_; }
  Status SetState(std::span<const float> state) override;

 private:
  // Whether the next step of the slice at `offset` takes the momentum's part.
  bool MomentumDue(int64_t offset) const { return (steps_[offset] + 1) % every_ == 0; }

  float lr_;
  float mu_;
  bool nesterov_;
  int64_t every_;
  std::vector<float> velocity_;
  std::vector<float> buffer_;
  std::vector<int64_t> steps_;  // per parameter: every one of a slice steps together
};

// Sgd, with heavy-ball momentum when momentum > 0. InvalidArgument for
// a learning rate <= 0 or a momentum outside [0, 1).
Result<std::unique_ptr<Optimizer>> MakeOptimizer(double lr, double momentum, int64_t size);
// As MakeOptimizer, with Nesterov's momentum when `nesterov` (and momentum >
// 0): the outer optimizer the local-SGD policies step the model with.
Result<std::unique_ptr<Optimizer>> MakeOptimizer(double lr, double momentum, bool nesterov,
                                                 int64_t size);
// As above, with the momentum's part taken once every `momentum_every`
// steps (DelayedMomentum) when that is above 1 and momentum > 0.
Result<std::unique_ptr<Optimizer>> MakeOptimizer(double lr, double momentum, bool nesterov,
                                                 int64_t momentum_every, int64_t size);

// The optimizer `settings` ask for, over the model whose tensors are
// `layout` (empty: one group), for its slice [begin, end) (a server
// shard's; the whole model: 0 and its size): plain SGD and momentum
// (settings.Plain()) by the classes above, anything more by TorchSgd or
// Adam (rules.h), with the settings' schedule. InvalidArgument naming the
// flag when the settings are bad.
Result<std::unique_ptr<Optimizer>> MakeOptimizer(const OptimizerSettings& settings,
                                                 std::span<const model::TensorSpec> layout,
                                                 int64_t begin, int64_t end);

// `optimizer`'s next step along scale * grad (Optimizer::Begin), or, with
// none (the plain sum of model deltas), just the scale.
inline StepInfo BeginStep(Optimizer* optimizer, float scale) {
  return optimizer != nullptr ? optimizer->Begin(scale) : StepInfo{scale};
}

// What the server does on a policy's Apply or ApplyDelta: with an optimizer,
// one step along scale * acc; without one (nullptr), params += scale * acc, a
// plain sum of model deltas. Then acc is zeroed for the next round.
// `params` and `acc` may be the slice of the model that starts at `offset`;
// calls on disjoint slices may run at the same time (see StepSlice).
// REQUIRES: params and acc of equal size, inside the optimizer's.
void ApplyAccumulated(Optimizer* optimizer, const StepInfo& step, std::span<float> params,
                      std::span<float> acc, int64_t offset = 0);
// The whole model's next step: ApplyAccumulated(optimizer,
// BeginStep(optimizer, scale), params, acc).
inline void ApplyAccumulated(Optimizer* optimizer, float scale, std::span<float> params,
                             std::span<float> acc) {
  ApplyAccumulated(optimizer, BeginStep(optimizer, scale), params, acc, 0);
}

// Whether StepAccumulatedOutOfPlace can compute ApplyAccumulated's step
// with `optimizer` (nullptr, the plain sum, can).
bool StepsOutOfPlace(const Optimizer* optimizer);

// ApplyAccumulated's step, checked and computed in one pass, out of place:
// writes the parameters it would leave into `out`; then acc holds the
// optimizer's new state for TakeAccumulated when it keeps one, and is
// zeroed when it does not. Changes nothing else. Returns whether every
// parameter written is finite (AccumulatedStaysFinite's answer); `out`
// ends bit for bit as ApplyAccumulated would leave `params`. Slices as
// for ApplyAccumulated. REQUIRES: StepsOutOfPlace(optimizer); `out` of
// params' size, apart from params and acc.
bool StepAccumulatedOutOfPlace(const Optimizer* optimizer, const StepInfo& step,
                               std::span<const float> params, std::span<float> acc,
                               std::span<float> out, int64_t offset = 0);

// Takes the step StepAccumulatedOutOfPlace computed on the same slice (the
// optimizer's state from acc, when it keeps one), then zeroes acc; the
// caller puts `out` in place of the parameters.
void TakeAccumulated(Optimizer* optimizer, std::span<float> acc, int64_t offset = 0);

// Whether ApplyAccumulated with the same arguments would leave every
// parameter (and the optimizer's state) finite; changes nothing. One pass
// reading what the step reads, so checking a step before taking it costs
// about one more read of the model, never a copy.
bool AccumulatedStaysFinite(const Optimizer* optimizer, const StepInfo& step,
                            std::span<const float> params, std::span<const float> acc,
                            int64_t offset = 0);

// One step of a worker's local optimizer (the local modes, wbsp), heavy-ball
// momentum as on the server: v <- mu v + g; params <- params - lr v.
// REQUIRES: params, velocity and grad of equal size.
void LocalMomentumStep(std::span<float> params, std::span<float> velocity,
                       std::span<const float> grad, float lr, float mu);

}  // namespace dmlps::optim

#endif  // DMLPS_OPTIM_OPTIMIZER_H_
