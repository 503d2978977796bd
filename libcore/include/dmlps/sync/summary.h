// The closing numbers of a run, the same for a real cluster (RunReport) and
// a simulated one (SimReport): what share of the run the workers computed
// and waited.
#ifndef DMLPS_SYNC_SUMMARY_H_
#define DMLPS_SYNC_SUMMARY_H_

#include <cstdint>
#include <span>

namespace dmlps::sync {

// What one worker did over a run, as it reported it.
struct WorkerTotals {
  int64_t steps = 0;      // pushes
  int64_t samples = 0;    // samples of its pushes that were used
  double compute_s = 0;   // computing
  double straggle_s = 0;  // emulated slowness: it stands for a slower machine's compute
  double wait_s = 0;      // waiting for the server's answers
  int64_t refused = 0;    // payloads or chunks the server refused
  // What it sent the server, headers and payloads: what a policy that
  // pushes less often saves.
  int64_t bytes_sent = 0;
};

struct RunSummary {
  double compute_ratio_mean = 0;  // over workers that stepped: (compute + straggle) / seconds
  double compute_ratio_min = 0;
  double wait_share = 0;       // mean over workers that stepped of wait / seconds
  double bytes_sent_mean = 0;  // mean over workers that stepped of bytes_sent
};

// The share of a run of `seconds` the worker spent computing, its emulated
// slowness included, at most 1; 0 for a run of no time.
double ComputeRatio(const WorkerTotals& worker, double seconds);

// The summary over the workers with at least one step; zeros when none has.
RunSummary Summarize(std::span<const WorkerTotals> workers, double seconds);

}  // namespace dmlps::sync

#endif  // DMLPS_SYNC_SUMMARY_H_
