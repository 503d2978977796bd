#include "auto/readings.h"

#include <spdlog/fmt/fmt.h>

#include <cmath>

#include "dmlps/advise/trace_profile.h"
#include "dmlps/predict/replay.h"
#include "dmlps/sync/registry.h"

namespace dmlps::autopolicy {
namespace {

// A step that had a core for less of its time than this is taken as this.
constexpr double kMinCoreShare = 0.01;
// A step reported as over this many times what the server saw it take is
// no measurement.
constexpr double kMaxOverCycle = 10;

// What a step is measured against to tell whether it was delayed
// (WorkerFrom): the lower quartile of the worker's own steps, so that a
// worker delayed now and then is not slow; where that quartile is itself
// at kDelayFactor times `cluster_level` or more (chance put most of its
// few steps behind a delay) and its fastest step is not, its fastest. A
// steady straggler has no step at the others' level.
double DelayReference(const std::vector<double>& per_sample, double cluster_level) {
  const auto n = static_cast<int64_t>(per_sample.size());
  const double quartile = predict::LowerQuantile(per_sample, 0, n, 0.25);
  const double fastest = predict::LowerQuantile(per_sample, 0, n, 0);
  const double limit = advise::kDelayFactor * cluster_level;
  return quartile >= limit && fastest < limit ? fastest : quartile;
}

// The level of a worker's steps: the lower median of those that were not
// delayed against `reference` (DelayReference).
double LevelOf(const std::vector<double>& per_sample, double reference) {
  std::vector<double> undelayed;
  for (const double x : per_sample) {
    if (x < advise::kDelayFactor * reference) undelayed.push_back(x);
  }
  return predict::LowerQuantile(undelayed, 0, static_cast<int64_t>(undelayed.size()), 0.5);
}

// A share of steps delayed, as advise::WorkerProfile's delay_prob.
double DelayShare(int64_t delayed, int64_t steps) {
  return std::min(0.9,
                  static_cast<double>(delayed) / static_cast<double>(std::max<int64_t>(1, steps)));
}

}  // namespace

bool Readable(const sync::PushInfo& push, int64_t samples) {
  return samples >= 1 && push.busy_s > 0 && std::isfinite(push.busy_s) &&
         !(push.cycle_s > 0 && push.busy_s > kMaxOverCycle * push.cycle_s);
}

double CoreShare(const sync::PushInfo& push) {
  if (!(push.compute_s > 0) || !(push.run_wait_s > 0)) return 1;
  return std::clamp(1 - push.run_wait_s / push.compute_s, kMinCoreShare, 1.0);
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  return values[mid];
}

double ClusterLevel(const std::vector<std::vector<double>>& per_sample) {
  std::vector<double> levels;
  for (const std::vector<double>& w : per_sample)
    levels.push_back(LevelOf(w, DelayReference(w, 0)));
  return predict::LowerQuantile(levels, 0, static_cast<int64_t>(levels.size()), 0.5);
}

advise::WorkerProfile WorkerFrom(const std::vector<double>& per_sample,
                                 const std::vector<int64_t>& clock, double extra_s, int64_t batch,
                                 double cluster_level, advise::StepTimes* steps,
                                 DelayTally* tally) {
  const auto n = static_cast<int64_t>(per_sample.size());
  const double level = LevelOf(per_sample, DelayReference(per_sample, cluster_level));
  const auto b = static_cast<double>(batch);
  advise::WorkerProfile w;
  w.step_s = level * b + extra_s;
  int64_t delayed = 0;
  double excess = 0;
  std::vector<double> spread;  // |log(x / level)| of the undelayed steps
  for (size_t i = 0; i < per_sample.size(); ++i) {
    const double x = per_sample[i];
    steps->clocks.push_back(clock[i]);
    steps->seconds.push_back(x * b);
    if (x >= advise::kDelayFactor * level) {
      ++delayed;
      excess += (x - level) * b;
    } else {
      spread.push_back(std::abs(std::log(x / level)));
    }
  }
  if (delayed > 0) {
    w.delay_prob = DelayShare(delayed, n);
    w.delay_s = excess / static_cast<double>(delayed);
  }
  *tally = {delayed, n, excess};
  // Robust: the median absolute deviation, as a normal's sd; a step that
  // waited for a core now and then must not make every step noisy.
  w.jitter = std::min(kMaxJitter, 1.4826 * Median(spread));
  return w;
}

void PoolDelays(const std::vector<DelayTally>& tallies,
                std::vector<advise::WorkerProfile>* workers) {
  DelayTally all;
  for (const DelayTally& t : tallies) {
    all.delayed += t.delayed;
    all.steps += t.steps;
    all.excess_s += t.excess_s;
  }
  const double rate = static_cast<double>(all.delayed) / static_cast<double>(all.steps);
  if (tallies.size() < 2 || !(rate > 0) || !(rate < 1)) return;
  double dispersion = 0;
  for (const DelayTally& t : tallies) {
    const double expected = rate * static_cast<double>(t.steps);
    const double off = static_cast<double>(t.delayed) - expected;
    dispersion += off * off / (expected * (1 - rate));
  }
  const auto freedom = static_cast<double>(tallies.size() - 1);
  if (dispersion > freedom + 3 * std::sqrt(2 * freedom)) return;
  for (advise::WorkerProfile& w : *workers) {
    w.delay_prob = DelayShare(all.delayed, all.steps);
    w.delay_s = all.excess_s / static_cast<double>(all.delayed);
  }
}

bool GivesUpTolerance(std::string_view running, std::string_view to) {
  return to == sync::kReferencePolicy && running != sync::kReferencePolicy;
}

std::string DescribeMeasured(const advise::ClusterProfile& profile) {
  std::string text;
  if (profile.workers.size() <= 8) {
    text = "steps ms";
    for (const advise::WorkerProfile& w : profile.workers) {
      text += fmt::format(" {:.3g}", w.step_s * 1e3);
      if (w.delay_prob > 0) text += fmt::format("(+{:.0f}%)", w.delay_prob * 100);
    }
  } else {
    std::vector<double> steps;
    for (const advise::WorkerProfile& w : profile.workers) steps.push_back(w.step_s * 1e3);
    const auto [lo, hi] = std::minmax_element(steps.begin(), steps.end());
    text = fmt::format("{} workers, steps {:.3g} to {:.3g} ms, median {:.3g}", steps.size(), *lo,
                       *hi, Median(steps));
  }
  return text + fmt::format(" + {:.3g} ms each; ", 2e3 * profile.latency_s) +
         advise::DescribeProfile(profile);
}

std::string Awaited(std::string_view policy, const advise::ClusterProfile& profile) {
  return fmt::format("{} for {}", policy, advise::FeatureKind(profile));
}

const advise::Prediction* FindPrediction(const advise::Advice& advice, std::string_view policy) {
  for (const advise::Prediction& p : advice.predictions) {
    if (p.policy == policy && p.failure.empty()) return &p;
  }
  return nullptr;
}

}  // namespace dmlps::autopolicy
