// Learning-rate schedules: the factor the base learning rate is multiplied
// by at each step of the server's optimizer, as torch.optim.lr_scheduler's
// schedulers give it when stepped once per optimizer step.
#ifndef DMLPS_OPTIM_SCHEDULE_H_
#define DMLPS_OPTIM_SCHEDULE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/base/status.h"

namespace dmlps::optim {

// A schedule: `warmup` steps of linear warmup, then the decay `kind` over
// the steps after the warmup (t counts them from 0):
//   constant              1
//   step:S:G              G^floor(t / S)                  (torch's StepLR)
//   multistep:M1,M2..:G   G^(number of milestones <= t)   (MultiStepLR)
//   cosine:T[:F]          F + (1 - F)(1 + cos(pi min(t, T) / T)) / 2
//                                                         (CosineAnnealingLR, eta_min = F lr)
//   linear:T[:F]          1 + (F - 1) min(t, T) / T       (LinearLR from 1 to F)
// During the warmup, step k (from 0) takes (k + 1) / warmup: the first
// step already moves the model, the warmup's last takes the full rate.
struct Schedule {
  enum class Kind { kConstant, kStep, kMultiStep, kCosine, kLinear };
  Kind kind = Kind::kConstant;
  int64_t warmup = 0;
  int64_t every = 0;                // step: steps per decay
  std::vector<int64_t> milestones;  // multistep: ascending
  double gamma = 1;                 // step, multistep: the decay's factor
  int64_t length = 0;               // cosine, linear: steps of the decay (T)
  double floor = 0;                 // cosine, linear: the factor it ends at (F)

  // The factor at step `step` (0 for the first step the optimizer takes).
  double Factor(int64_t step) const;
  // The spec this schedule was parsed from, in canonical form
  // ("cosine:1000:0"), without the warmup.
  std::string Spec() const;
};

// Parses a schedule spec as above (--lr-schedule) with `warmup` steps of
// warmup (--warmup); InvalidArgument naming what is wrong.
Result<Schedule> ParseSchedule(std::string_view spec, int64_t warmup);

}  // namespace dmlps::optim

#endif  // DMLPS_OPTIM_SCHEDULE_H_
