// What auto's decisions read from the workers' pushes, step by step:
// whether a step can be read, its level and delays, and the profile's
// parts (docs/auto-readings.md).
#ifndef DMLPS_AUTO_READINGS_H_
#define DMLPS_AUTO_READINGS_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/advise/advisor.h"
#include "dmlps/sync/policy.h"

namespace dmlps::autopolicy {

// The most log-sd of noise a worker's steps are taken to have.
inline constexpr double kMaxJitter = 1;

// Whether a push's step time can be read: none, no number, no samples, or
// a step over ten times what the server saw it take (PushInfo::cycle_s:
// the step and both transfers) is a broken clock or a lie, no measurement.
bool Readable(const sync::PushInfo& push, int64_t samples);

// The share of a step's computing that had a core (advise::WorkerProfile's
// core_share), in [0.01, 1]; 1 when the push does not tell.
double CoreShare(const sync::PushInfo& push);

double Median(std::vector<double> values);

// The last `n` values of `values`.
template <typename T>
std::vector<T> Last(const std::deque<T>& values, size_t n) {
  n = std::min(n, values.size());
  return std::vector<T>(values.end() - static_cast<std::ptrdiff_t>(n), values.end());
}

// The workers' median level (the lower median of each worker's level
// against its own steps alone): what DelayReference measures a worker
// whose own steps are mostly delayed against.
double ClusterLevel(const std::vector<std::vector<double>>& per_sample);

// A worker's delayed steps: how many of how many, and their seconds beyond
// its level.
struct DelayTally {
  int64_t delayed = 0;
  int64_t steps = 0;
  double excess_s = 0;
};

// One worker's profile from its per-sample times, plus `extra_s` per step
// (its time beyond computing above the quickest worker's): its level, the
// lower median of its undelayed steps (a step is delayed at
// advise::kDelayFactor times its reference or more: the lower quartile of
// its steps, or its fastest where that quartile is delayed against
// `cluster_level` and the fastest is not), its delays and its jitter (the
// undelayed steps' robust log-sd). The steps' clocks (`clock`, one each)
// and times go into `steps`, its delays into `tally`
// (docs/auto-readings.md, "Each worker's steps").
advise::WorkerProfile WorkerFrom(const std::vector<double>& per_sample,
                                 const std::vector<int64_t>& clock, double extra_s, int64_t batch,
                                 double cluster_level, advise::StepTimes* steps, DelayTally* tally);

// Where the workers' counts of delayed steps are what one rate for all
// would give (the binomial dispersion within three standard deviations of
// its mean), gives every worker that rate and the mean delay: with few
// steps each, chance spreads one rate wide. A worker delayed far more than
// the others keeps its own (docs/auto-readings.md, "The profile a decision
// reads").
void PoolDelays(const std::vector<DelayTally>& tallies,
                std::vector<advise::WorkerProfile>* workers);

// Whether a switch from `running` into `to` gives up tolerance of a
// straggler: into the reference policy (BSP), whose every round waits for
// the slowest push, from any other candidate (each of which leaves it
// behind or, LB-BSP, rebalances around it).
bool GivesUpTolerance(std::string_view running, std::string_view to);

// What a decision measured, in words: each worker's step (up to eight of
// them), else the spread, then the profile's features.
std::string DescribeMeasured(const advise::ClusterProfile& profile);

// What a `wait:` decision must see again: the same choice for the same
// kind of cause, advise::FeatureKind (docs/auto.md, "How it decides").
std::string Awaited(std::string_view policy, const advise::ClusterProfile& profile);

// The prediction of `policy` in `advice`, unless it failed; else null.
const advise::Prediction* FindPrediction(const advise::Advice& advice, std::string_view policy);

}  // namespace dmlps::autopolicy

#endif  // DMLPS_AUTO_READINGS_H_
