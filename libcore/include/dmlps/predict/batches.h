// Splitting a global batch over workers in proportion to their predicted
// speeds: LB-BSP's analytic allocation, which the policy applies at each
// rebalance and dmlps-predict --plan prints, so that both give one answer.
#ifndef DMLPS_PREDICT_BATCHES_H_
#define DMLPS_PREDICT_BATCHES_H_

#include <cstdint>
#include <limits>
#include <vector>

namespace dmlps::predict {

// A batch bound that stands for "no cap".
inline constexpr int64_t kNoBatchCap = std::numeric_limits<int64_t>::max();

// Splits `total` samples into integers b_i close to clamp(lambda * weight_i,
// lo_i, hi_i), with lambda chosen so that they add up to `total` (clipped to
// [sum lo, sum hi]). Clamping at a cap and sharing the rest out by weight is
// the same as redistributing what the caps cut off to the uncapped workers in
// proportion. A weight of 0 pins the worker to lo_i. Rounding is by largest
// remainder, so the sum is exact. REQUIRES: equal sizes, lo_i <= hi_i.
std::vector<int64_t> Distribute(int64_t total, const std::vector<double>& weight,
                                const std::vector<int64_t>& lo, const std::vector<int64_t>& hi);

// What batches capped by `caps` (cap <= 0: none) add up to: the global
// batch, or the caps' sum when every worker has a cap and they hold less.
int64_t BatchTarget(int64_t global_batch, const std::vector<int64_t>& caps);

// LB-BSP's analytic (cpu-mode) batch sizes for a global batch B: b_i = B *
// v_i / sum_j v_j over the workers with a predicted speed v_i (positive and
// finite), by largest remainder, each in [1, caps_i] (caps_i <= 0: no cap); a
// worker without a prediction keeps current_i. They add up to B, or to the
// caps' sum when every worker has a cap and the caps hold less. What the
// policy does at each rebalance and what dmlps-predict --plan prints.
// REQUIRES: equal sizes.
std::vector<int64_t> AnalyticBatches(int64_t global_batch, const std::vector<double>& speed,
                                     const std::vector<int64_t>& current,
                                     const std::vector<int64_t>& caps);

}  // namespace dmlps::predict

#endif  // DMLPS_PREDICT_BATCHES_H_
