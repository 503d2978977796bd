// A process's CPU and memory use, read from /proc, as workers report them
// with every push (LB-BSP's NARX predictor takes them as exogenous inputs).
#ifndef DMLPS_WORKER_RESOURCE_USAGE_H_
#define DMLPS_WORKER_RESOURCE_USAGE_H_

#include <chrono>
#include <cstdint>
#include <string>

#include "dmlps/base/status.h"

namespace dmlps::worker {

// One reading of a process's counters.
struct ResourceSample {
  double cpu_seconds = 0;      // user + system time so far
  int64_t resident_bytes = 0;  // resident set size
  double wall_seconds = 0;     // monotonic time of the reading
};

// Parses the contents of /proc/PID/stat and /proc/PID/statm. DataLoss when
// they do not look like Linux's.
Result<ResourceSample> ParseProcStat(const std::string& stat, const std::string& statm,
                                     double ticks_per_second, int64_t page_bytes);

// Reads this process's counters now.
Result<ResourceSample> ReadSelfUsage();

// CPU use between two readings, in cores (1.0 = one core busy all along).
double CpuCores(const ResourceSample& before, const ResourceSample& after);

// The seconds a thread has spent ready to run but waiting for a core, from
// the contents of /proc/thread-self/schedstat ("RUN_NS WAIT_NS SLICES").
// On a host with a core free whenever the thread can run it stays still;
// where more threads run than there are cores it grows with their share.
// DataLoss when the contents do not look like Linux's.
Result<double> ParseRunDelay(const std::string& schedstat);

// The calling thread's run delay so far; NotFound where the kernel does not
// keep it (no /proc/thread-self/schedstat).
Result<double> ReadThreadRunDelay();

// What the calling thread waited for a core since `before` (its
// ReadThreadRunDelay then), within [0, most]; 0 when either reading failed.
std::chrono::microseconds RunDelaySince(const Result<double>& before,
                                        std::chrono::microseconds most);

}  // namespace dmlps::worker

#endif  // DMLPS_WORKER_RESOURCE_USAGE_H_
