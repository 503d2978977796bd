// Emulated heterogeneity, the ways the papers made a worker slow (see
// "Emulating heterogeneity" in docs/algorithms-stragglers.md). Everything here is pure: it
// says how long to sleep or how long a send must take, and the worker does
// the sleeping. Randomness comes from a seeded std::mt19937_64 turned into
// doubles by our own bit arithmetic, so a seed gives the same delays with any
// standard library.
#ifndef DMLPS_WORKER_STRAGGLER_H_
#define DMLPS_WORKER_STRAGGLER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dmlps/base/status.h"

namespace dmlps::worker {

// The worker's straggler flags, as parsed; check with ValidateStragglerSpec.
struct StragglerSpec {
  // --slowdown K: after a step whose compute took t, sleep (K-1)t.
  double slowdown = 1;
  // --slowdown-schedule "0:1,150:4": from iteration I on, slowdown F. Before
  // the first entry's iteration `slowdown` applies; from it on, the schedule.
  std::vector<std::pair<int64_t, double>> schedule;
  // --delay-prob P: with probability P per step, sleep `delay`.
  double delay_prob = 0;
  // --delay-ms D: with delay_prob == 0 and delay > 0, every step sleeps D
  // (the fixed delay of WBSP's odd workers).
  std::chrono::microseconds delay{0};
  // --round-robin-ms D: in iteration t the worker of rank t mod N sleeps D.
  std::chrono::microseconds round_robin{0};
  // --bandwidth-mbps M: cap on what the worker sends, megabits/s; 0: no cap.
  double bandwidth_mbps = 0;
  // --bandwidth-schedule "0:0,150:100": from iteration I on, cap M (0: none).
  // Before the first entry's iteration `bandwidth_mbps` applies.
  std::vector<std::pair<int64_t, double>> bandwidth_schedule;
  // Seeds the probabilistic delay; mixed with the rank, so workers sharing a
  // seed still draw independently.
  uint64_t seed = 0;
};

// Parses "ITER:FACTOR[,ITER:FACTOR...]" such as "0:1,150:4": iterations whole,
// >= 0 and strictly increasing, factors finite and >= 1; nothing else (no
// spaces, no empty entries). The InvalidArgument names the bad entry, not the
// flag, so callers put "--slowdown-schedule: " before it.
Result<std::vector<std::pair<int64_t, double>>> ParseSlowdownSchedule(std::string_view text);
// The same for "ITER:MBPS[,...]", caps finite and >= 0 (0: no cap).
Result<std::vector<std::pair<int64_t, double>>> ParseBandwidthSchedule(std::string_view text);

// Every problem with `spec`, one message each naming its flag; empty if none.
std::vector<std::string> ValidateStragglerSpec(const StragglerSpec& spec);

// One worker's emulated slowness. REQUIRES: ValidateStragglerSpec(spec) is
// empty (an invalid spec never crashes: negative or NaN delays count as 0).
class StragglerProfile {
 public:
  // rank in [0, num_workers) takes part in round-robin; any other rank, or
  // num_workers < 1, never gets the round-robin delay.
  StragglerProfile(StragglerSpec spec, int64_t rank, int64_t num_workers);

  // Slowness to add after step `iteration` (0-based, the worker's own count)
  // whose compute took `compute`: (factor-1)*compute + the fixed or
  // probabilistic delay + the round-robin delay when iteration mod N == rank,
  // rounded to the nearest microsecond. Draws one random number per call
  // while delay_prob > 0, so results depend on the sequence of calls.
  std::chrono::microseconds ExtraDelay(int64_t iteration, std::chrono::microseconds compute);

  // The slowdown factor in force at `iteration`.
  double SlowdownAt(int64_t iteration) const;

  // The bandwidth cap in force at `iteration`, megabits/s; 0: none.
  double BandwidthAt(int64_t iteration) const;

  // How long sending `bytes` in step `iteration` must take under the
  // bandwidth cap then in force, bytes*8 / (M*1e6) seconds rounded to the
  // nearest microsecond; 0 without a cap.
  std::chrono::microseconds TransferTime(int64_t iteration, int64_t bytes) const;

  const StragglerSpec& spec() const { return spec_; }

 private:
  // A uniform double in [0, 1) from the top 53 bits of one draw.
  double NextUniform();

  StragglerSpec spec_;
  int64_t rank_;
  int64_t num_workers_;
  // Made at the first draw (delay_prob > 0 only): 2.5 KB that a simulation
  // of thousands of workers need not hold for each.
  std::unique_ptr<std::mt19937_64> rng_;
};

}  // namespace dmlps::worker

#endif  // DMLPS_WORKER_STRAGGLER_H_
