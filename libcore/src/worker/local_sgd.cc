// The worker's loop for the local-SGD policies (docs/algorithms-local-sgd.md,
// "Local SGD"): rounds of H local steps whose pseudo-gradient is pushed.
#include "worker/steps.h"

namespace dmlps::worker {
namespace {

// H local steps on `copy` (its params changed in place, the inner
// optimizer's velocity kept across rounds); `first_step` numbers the first
// of them as the straggler profile counts steps. Returns their sum:
// samples, compute (the local updates included), emulated slowness, and
// the mean loss.
Result<StepResult> TrainLocally(StepContext& steps, int64_t first_step, int64_t local_steps,
                                LocalCopy& copy) {
  StepResult sum;
  double loss_sum = 0;
  for (int64_t h = 0; h < local_steps; ++h) {
    DMLPS_ASSIGN_OR_RETURN(StepResult step,
                           TrainLocalStep(steps, first_step + h, steps.state().batch, copy));
    steps.Count(step);
    sum.samples += step.samples;
    sum.compute += step.compute;
    sum.straggle += step.straggle;
    sum.run_wait += step.run_wait;
    loss_sum += step.loss * static_cast<double>(step.samples);
  }
  sum.loss = sum.samples > 0 ? loss_sum / static_cast<double>(sum.samples) : 0;
  return sum;
}

}  // namespace

// Pull the model, train a copy for H steps with the inner optimizer (SGD
// with the job's learning rate and momentum, or the computation's own),
// push the pseudo-gradient
// θ_start − θ_local with the next pull. The server's reply decides when the
// next round starts.
Status RunLocalSgdSteps(StepContext& steps) {
  LocalCopy copy(steps.computer());  // its reference: the round's start
  bool pulled = false;               // the Pull went out with the last push
  int64_t step = 0;                  // local steps taken, as the straggler profile counts
  for (int64_t clock = 0;; ++clock) {
    int64_t wait_us = 0;
    DMLPS_ASSIGN_OR_RETURN(bool more, steps.Download(clock, copy.params, pulled, &wait_us));
    if (!more) return Status::Ok();
    copy.reference = copy.params;
    // H, or what the server set with the model (async-localsgd with DyLU).
    const int64_t local_steps = steps.state().local_steps > 0 ? steps.state().local_steps
                                                              : steps.link().welcome().local_steps;
    DMLPS_ASSIGN_OR_RETURN(StepResult round, TrainLocally(steps, step, local_steps, copy));
    step += local_steps;
    // The pseudo-gradient θ_start − θ_local, and the module state as it is.
    LocalPush(copy.reference, copy.params, copy.params, copy.pushes.Take(&copy.payload),
              StateBegin(steps.link().welcome()));
    const proto::Body pull = proto::Pull{clock + 1};
    DMLPS_RETURN_IF_ERROR(
        steps.Push(steps.PushFor(clock, steps.state().batch * local_steps, round, wait_us),
                   copy.payload, &pull));
    pulled = true;
  }
}

}  // namespace dmlps::worker
