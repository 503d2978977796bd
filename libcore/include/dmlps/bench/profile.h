// dmlps-bench profile: how long a worker's gradient step takes against its
// batch size on one device. On a GPU the curve is not a line (launch
// overhead at small batches, saturation, a memory cap), which is what
// LB-BSP's GPU mode fits.
#ifndef DMLPS_BENCH_PROFILE_H_
#define DMLPS_BENCH_PROFILE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/bench/report.h"

namespace dmlps::bench {

struct ProfileConfig {
  std::string device = "cpu";  // model::ParseDevice
  std::string model = "mlp:128";
  std::string data = "fashion-mnist";
  int64_t min_batch = 16;
  int64_t max_batch = 4096;
  double factor = 2;   // each batch size this many times the one before
  int64_t reps = 5;    // timed steps per size; the table gives their median
  int64_t warmup = 1;  // untimed steps first
  int64_t threads = 1;
  uint64_t seed = 1;
};

// Every problem with the config, one per line.
std::vector<std::string> ValidateProfileConfig(const ProfileConfig& config);

// Parses "LO..HI" (or "N" for one size) into *lo and *hi, 1 <= LO <= HI <= 2^24.
Status ParseBatchRange(std::string_view text, int64_t* lo, int64_t* hi);

// lo, lo*factor, ... rounded, each larger than the last, and hi last.
std::vector<int64_t> GeometricSizes(int64_t lo, int64_t hi, double factor);

struct ProfileRow {
  int64_t batch = 0;
  Spread ms;                 // of one step: gather, loss and gradient, back on the host
  double samples_per_s = 0;  // batch / median
  double us_per_sample = 0;  // median / batch
};

struct ProfileReport {
  ProfileConfig config;
  std::string device;  // as probed, e.g. "cuda:0 (NVIDIA H100 80GB HBM3)"
  std::string model;   // ModelSpec::Name()
  int64_t num_params = 0;
  std::vector<ProfileRow> rows;
};

// Loads the training data, builds the model on the device, and times steps
// of every size, each on samples drawn at random. Unavailable when the
// device cannot be used; stops early (what was measured so far) on a signal.
Result<ProfileReport> RunProfile(const ProfileConfig& config, const std::atomic<int>* signal,
                                 const std::function<void(const ProfileRow&)>& progress);

void WriteProfileReport(const ProfileReport& report, Format format, std::ostream& out);

}  // namespace dmlps::bench

#endif  // DMLPS_BENCH_PROFILE_H_
