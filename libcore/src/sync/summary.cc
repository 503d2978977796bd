#include "dmlps/sync/summary.h"

#include <algorithm>

namespace dmlps::sync {

double ComputeRatio(const WorkerTotals& worker, double seconds) {
  const double busy = worker.compute_s + worker.straggle_s;
  return seconds > 0 ? std::min(1.0, busy / seconds) : 0;
}

RunSummary Summarize(std::span<const WorkerTotals> workers, double seconds) {
  double ratio_sum = 0;
  double wait_sum = 0;
  double ratio_min = 1;
  double bytes_sum = 0;
  int64_t counted = 0;
  for (const WorkerTotals& w : workers) {
    if (w.steps == 0) continue;
    const double ratio = ComputeRatio(w, seconds);
    ratio_sum += ratio;
    wait_sum += seconds > 0 ? std::min(1.0, w.wait_s / seconds) : 0;
    ratio_min = std::min(ratio_min, ratio);
    bytes_sum += static_cast<double>(w.bytes_sent);
    ++counted;
  }
  RunSummary summary;
  if (counted > 0) {
    summary.compute_ratio_mean = ratio_sum / static_cast<double>(counted);
    summary.compute_ratio_min = ratio_min;
    summary.wait_share = wait_sum / static_cast<double>(counted);
    summary.bytes_sent_mean = bytes_sum / static_cast<double>(counted);
  }
  return summary;
}

}  // namespace dmlps::sync
