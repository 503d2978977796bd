// The advisor: each candidate simulated on timing alone from the measured
// profile, its time per iteration scaled by its statistical efficiency.
#include "dmlps/advise/advisor.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "dmlps/bench/experiment.h"
#include "dmlps/predict/replay.h"
#include "dmlps/sim/sim.h"
#include "dmlps/sync/registry.h"

namespace dmlps::advise {
namespace {

bool Finite(double v) { return std::isfinite(v); }

// Shared cores run as the kernel's scheduler runs them (sim/cpu.h): a job
// has a whole core for a slice, and one that wakes takes a core from the
// job furthest into its slice. Cores shared out at once (processor
// sharing) would have the late workers' steps share the cores with the
// fresh ones' evenly, so that a round that waits for fewer pushes gains
// nothing, where on a real host the workers that wake up to the new model
// run first (docs/simulator-cores.md, "Backup workers").
constexpr double kSharedSliceS = 0.003;
// A job that wakes runs its first slice this much longer, as the kernel's
// fair scheduler credits a task that slept: the workers that close a
// backup round run their steps through before the late ones, and the
// simulated rounds come out as long as the measured ones
// (docs/simulator-cores.md, "A credit on wake-up").
constexpr double kWakeCreditS = 0.006;

// The q-quantile of `values` (one of them, the lower of two; 0 for none).
double Quantile(const std::vector<double>& values, double q) {
  return predict::LowerQuantile(values, 0, static_cast<int64_t>(values.size()), q);
}

double LowerMedian(const std::vector<double>& values) { return Quantile(values, 0.5); }

double FastestStep(const ClusterProfile& profile) {
  double fastest = 0;
  for (const WorkerProfile& w : profile.workers) {
    if (fastest == 0 || w.step_s < fastest) fastest = w.step_s;
  }
  return fastest;
}

// The rank of the slowest worker (steady level) and its ratio to the fastest.
std::pair<size_t, double> Slowest(const ClusterProfile& profile) {
  const double fastest = FastestStep(profile);
  size_t slowest = 0;
  for (size_t r = 1; r < profile.workers.size(); ++r) {
    if (profile.workers[r].step_s > profile.workers[slowest].step_s) slowest = r;
  }
  return {slowest, fastest > 0 ? profile.workers[slowest].step_s / fastest : 1};
}

// The rank whose transient delays cost most per step (delay_prob * delay_s).
std::pair<size_t, double> MostDelayed(const ClusterProfile& profile) {
  size_t most = 0;
  double cost = 0;
  for (size_t r = 0; r < profile.workers.size(); ++r) {
    const double c = profile.workers[r].delay_prob * profile.workers[r].delay_s;
    if (c > cost) {
      cost = c;
      most = r;
    }
  }
  return {most, cost};
}

// The simulation of `policy` on the profile: workers as measured (the
// fastest one's step is the cost model, the others' steady slowness their
// slowdown factor), each with a machine of its own, or all on the cores
// SharedCores finds, where a step's work is what the fastest worker's
// took a core alone: its step times the typical share.
sim::SimConfig ConfigFor(const ClusterProfile& profile, const sync::PolicyConfig& policy,
                         const AdvisorOptions& options) {
  sim::SimConfig config;
  config.policy = policy;
  config.job.workers = policy.job.workers;
  config.job.batch = policy.job.batch;
  config.job.max_iterations = options.iterations;
  config.job.eval_every = std::max<int64_t>(options.iterations, 1);
  config.job.seed = options.seed;
  const double fastest = FastestStep(profile);
  double work = fastest;
  if (const int64_t cores = SharedCores(profile); cores > 0) {
    config.shared_cores = cores;
    config.cpu_slice_s = kSharedSliceS;
    config.cpu_wake_preempts = true;
    config.cpu_wake_credit_s = kWakeCreditS;
    work *= TypicalShare(profile);
  }
  config.cost = sim::CostModel::Linear(0, work / static_cast<double>(profile.batch));
  config.cost.param_s = profile.param_s;
  config.cost.message_s = profile.message_s;
  // On shared cores the links are the host's loopback: the cores copy
  // every message, a push dropped too.
  config.network = {profile.link_gbps, profile.latency_s, config.shared_cores > 0};
  for (const WorkerProfile& w : profile.workers) {
    worker::StragglerSpec spec;
    spec.slowdown = std::max(1.0, w.step_s / fastest);
    if (profile.rotation_s > 0) {
      // The simulated worker of rank t mod N sleeps in iteration t.
      spec.round_robin = std::chrono::microseconds(std::llround(profile.rotation_s * 1e6));
    } else if (w.delay_prob > 0 && w.delay_s > 0) {
      spec.delay_prob = w.delay_prob;
      spec.delay = std::chrono::microseconds(std::llround(w.delay_s * 1e6));
    }
    spec.seed = options.seed;
    config.stragglers.push_back(spec);
    config.noise.push_back({w.jitter, 0});
  }
  return config;
}

Prediction Predict(const ClusterProfile& profile, const std::string& candidate,
                   const sync::PolicyConfig& policy, const AdvisorOptions& options,
                   const EfficiencyTable& table) {
  Prediction p;
  p.policy = candidate;
  if (std::optional<Efficiency> e = table.Find(candidate)) {
    p.efficiency =
        EfficiencyUnder(*e, Slowest(profile).second, DelayCost(profile), table.straggler_ratio);
    p.efficiency_row = e->policy;
  } else {
    p.efficiency_known = false;
  }
  Result<sim::SimReport> report =
      sim::SimulateTiming(ConfigFor(profile, policy, options), profile.num_params);
  if (!report.ok()) {
    p.failure = report.status().message();
    return p;
  }
  if (!report->failure.empty() || report->iterations < 1) {
    p.failure = report->failure.empty() ? "no iteration completed" : report->failure;
    return p;
  }
  p.iteration_s = report->seconds / static_cast<double>(report->iterations);
  p.compute_ratio = report->compute_ratio_mean;
  p.effective_s = p.efficiency * p.iteration_s;
  if (options.bsp_iterations_to_target > 0) {
    p.time_to_target_s = p.effective_s * options.bsp_iterations_to_target;
  }
  return p;
}

}  // namespace

double RotatingDelay(const std::vector<StepTimes>& workers) {
  const auto n = static_cast<int64_t>(workers.size());
  if (n < 2) return 0;
  std::vector<bool> taken(static_cast<size_t>(n), false);
  std::vector<double> delays;
  for (const StepTimes& w : workers) {
    // Its steps by residue, and the residue of the slowest median: its turn.
    std::vector<std::vector<double>> by(static_cast<size_t>(n));
    for (size_t i = 0; i < w.clocks.size() && i < w.seconds.size(); ++i) {
      by[static_cast<size_t>(((w.clocks[i] % n) + n) % n)].push_back(w.seconds[i]);
    }
    size_t turn = 0;
    double slowest = -1;
    for (size_t r = 0; r < by.size(); ++r) {
      const double m = LowerMedian(by[r]);
      if (static_cast<int64_t>(by[r].size()) >= kMinTurns && m > slowest) {
        slowest = m;
        turn = r;
      }
    }
    std::vector<double> others;
    for (size_t r = 0; r < by.size(); ++r) {
      if (r != turn) others.insert(others.end(), by[r].begin(), by[r].end());
    }
    const std::vector<double>& on = by[turn];
    if (slowest < 0 || taken[turn] || static_cast<int64_t>(others.size()) < kMinTurns ||
        !(Quantile(on, 0.25) > Quantile(others, 0.75))) {
      return 0;
    }
    taken[turn] = true;
    delays.push_back(slowest - LowerMedian(others));
  }
  return LowerMedian(delays);
}

std::vector<std::string> ValidateProfile(const ClusterProfile& profile) {
  std::vector<std::string> problems;
  if (profile.workers.empty()) problems.push_back("the profile has no workers");
  for (size_t r = 0; r < profile.workers.size(); ++r) {
    const WorkerProfile& w = profile.workers[r];
    if (!(w.step_s > 0) || !Finite(w.step_s) || !(w.jitter >= 0 && w.jitter <= 10) ||
        !(w.delay_prob >= 0 && w.delay_prob < 1) || !(w.delay_s >= 0) || !Finite(w.delay_s) ||
        !(w.core_share > 0 && w.core_share <= 1)) {
      problems.push_back(fmt::format(
          "worker {}: a step must take a positive time, jitter be in [0, 10], the delay "
          "probability in [0, 1), the delay finite and not negative and the core share in (0, 1]",
          r));
    }
  }
  if (profile.batch < 1) problems.push_back("the batch must be at least 1");
  if (profile.num_params < 1) problems.push_back("the model must have parameters");
  for (double v : {profile.link_gbps, profile.latency_s, profile.param_s, profile.message_s}) {
    if (!(v >= 0) || !Finite(v)) {
      problems.push_back("link and server costs must be finite and not negative");
      break;
    }
  }
  return problems;
}

std::vector<std::string> DefaultCandidates(const ClusterProfile& /*profile*/) {
  // Every trainer, built-in or external, runs these (docs/external-model.md).
  return {"bsp", "backup:1", "ssp:3", "wbsp", "abps", "lbbsp"};
}

bool HasSteadyStraggler(const ClusterProfile& profile) {
  return SlowestRatio(profile) >= kStragglerRatio;
}

double SlowestRatio(const ClusterProfile& profile) { return Slowest(profile).second; }

double DelayCost(const ClusterProfile& profile) {
  const double fastest = FastestStep(profile);
  if (!(fastest > 0)) return 0;
  if (profile.rotation_s > 0) {
    return profile.rotation_s / static_cast<double>(profile.workers.size()) / fastest;
  }
  return MostDelayed(profile).second / fastest;
}

namespace {

std::vector<double> CoreShares(const ClusterProfile& profile) {
  std::vector<double> shares;
  for (const WorkerProfile& w : profile.workers) shares.push_back(w.core_share);
  return shares;
}

// DescribeProfile's words before the shared cores.
std::string DescribeFeature(const ClusterProfile& profile);

}  // namespace

double TypicalShare(const ClusterProfile& profile) {
  const std::vector<double> shares = CoreShares(profile);
  return shares.empty() ? 1 : LowerMedian(shares);
}

double LogSpread(const std::vector<double>& values, double most) {
  const double center = LowerMedian(values);
  std::vector<double> spread;
  for (const double v : values) {
    if (v > 0 && center > 0) spread.push_back(std::abs(std::log(v / center)));
  }
  return std::min(most, 1.4826 * LowerMedian(spread));
}

int64_t SharedCoresOf(const std::vector<double>& core_shares) {
  if (core_shares.empty() || !(LowerMedian(core_shares) < kSharedBelow)) return 0;
  double sum = 0;
  for (const double share : core_shares) sum += share;
  return std::max<int64_t>(1, std::llround(sum));
}

int64_t SharedCores(const ClusterProfile& profile) {
  return profile.cores > 0 ? profile.cores : SharedCoresOf(CoreShares(profile));
}

int64_t SharedCoresAtMost(const ClusterProfile& profile, int64_t host_cores) {
  const int64_t read = SharedCores(profile);
  return read > 0 && host_cores > 0 ? std::min(read, host_cores) : read;
}

int64_t CommonHostCores(const std::vector<int64_t>& host_cores) {
  int64_t fewest = 0;
  for (const int64_t cores : host_cores) {
    if (cores < 1) return 0;
    fewest = fewest == 0 ? cores : std::min(fewest, cores);
  }
  return fewest;
}

namespace {

// Delays that add this share of the fastest step on average matter.
constexpr double kDelaysMatter = 0.1;

// The profile's telling feature: its kind, the worker it names, and the
// figures that describe it.
struct Feature {
  enum class Kind { kStraggler, kRotation, kDelays, kEven } kind = Kind::kEven;
  int64_t worker = 0;  // the slowest (kStraggler), the most delayed (kDelays)
  double ratio = 1;    // the slowest over the fastest
};

Feature TellingFeature(const ClusterProfile& profile) {
  const auto [slowest, ratio] = Slowest(profile);
  if (ratio >= kStragglerRatio)
    return {Feature::Kind::kStraggler, static_cast<int64_t>(slowest), ratio};
  if (profile.rotation_s > 0) return {Feature::Kind::kRotation, 0, ratio};
  const auto [delayed, cost] = MostDelayed(profile);
  if (cost > kDelaysMatter * FastestStep(profile))
    return {Feature::Kind::kDelays, static_cast<int64_t>(delayed), ratio};
  return {Feature::Kind::kEven, 0, ratio};
}

// The delays that matter: on one worker, on every worker (their mean
// share and length: auto reads one rate for all where chance alone spreads
// them), or on some, named by the most delayed.
std::string DescribeDelays(const ClusterProfile& profile, int64_t most) {
  const double matters = kDelaysMatter * FastestStep(profile);
  int64_t delayed = 0;
  double prob = 0;
  double length = 0;
  for (const WorkerProfile& w : profile.workers) {
    if (!(w.delay_prob * w.delay_s > matters)) continue;
    ++delayed;
    prob += w.delay_prob;
    length += w.delay_s;
  }
  const WorkerProfile& w = profile.workers[most];
  const auto all = static_cast<int64_t>(profile.workers.size());
  if (delayed > 1 && delayed == all) {
    return fmt::format("transient delays on every worker ({:.0f}% of steps, +{:.0f} ms)",
                       prob / static_cast<double>(delayed) * 100,
                       length / static_cast<double>(delayed) * 1e3);
  }
  const std::string which =
      delayed > 1 ? fmt::format("{} of {} workers, the most on worker-{}", delayed, all, most)
                  : fmt::format("worker-{}", most);
  return fmt::format("transient delays on {} ({:.0f}% of steps, +{:.0f} ms)", which,
                     w.delay_prob * 100, w.delay_s * 1e3);
}

std::string DescribeFeature(const ClusterProfile& profile) {
  const Feature f = TellingFeature(profile);
  switch (f.kind) {
    case Feature::Kind::kStraggler:
      return fmt::format("worker-{} steadily {:.1f}x slower than the fastest", f.worker, f.ratio);
    case Feature::Kind::kRotation:
      return fmt::format("delays taking turns (one worker per iteration held up +{:.0f} ms)",
                         profile.rotation_s * 1e3);
    case Feature::Kind::kDelays:
      return DescribeDelays(profile, f.worker);
    case Feature::Kind::kEven:
      break;
  }
  return fmt::format("an even cluster (steady steps within {:.2f}x of each other)", f.ratio);
}

}  // namespace

std::string FeatureKind(const ClusterProfile& profile) {
  const Feature f = TellingFeature(profile);
  switch (f.kind) {
    case Feature::Kind::kStraggler:
      return fmt::format("worker-{} steadily slower", f.worker);
    case Feature::Kind::kRotation:  // on fewer steps read as transient delays
    case Feature::Kind::kDelays:
      return "transient delays";
    case Feature::Kind::kEven:
      break;
  }
  return "an even cluster";
}

bool ReadsDelays(const ClusterProfile& profile) {
  return TellingFeature(profile).kind == Feature::Kind::kDelays;
}

std::string DescribeProfile(const ClusterProfile& profile) {
  const int64_t cores = SharedCores(profile);
  const std::string feature = DescribeFeature(profile);
  return cores > 0 ? fmt::format("{} on {} shared core{}", feature, cores, cores == 1 ? "" : "s")
                   : feature;
}

Result<Advice> Advisor::Advise(const ClusterProfile& profile, const AdvisorOptions& options) const {
  if (std::vector<std::string> problems = ValidateProfile(profile); !problems.empty()) {
    return Status::InvalidArgument(problems.front());
  }
  if (options.iterations < 1) return Status::InvalidArgument("simulate at least one iteration");
  const std::vector<std::string> candidates =
      options.candidates.empty() ? DefaultCandidates(profile) : options.candidates;
  bench::Experiment experiment;
  experiment.job.workers = static_cast<int64_t>(profile.workers.size());
  experiment.job.batch = profile.batch;
  std::vector<sync::PolicyConfig> policies;
  for (const std::string& c : candidates) {
    DMLPS_ASSIGN_OR_RETURN(sync::PolicyConfig policy, bench::PolicyFor(c, experiment));
    policies.push_back(policy);
  }

  Advice advice;
  const Prediction* best = nullptr;
  const Prediction* bsp = nullptr;
  for (size_t i = 0; i < candidates.size(); ++i) {
    advice.predictions.push_back(Predict(profile, candidates[i], policies[i], options, table_));
  }
  for (const Prediction& p : advice.predictions) {
    if (!p.failure.empty()) continue;
    if (best == nullptr || p.effective_s < best->effective_s) best = &p;
    if (p.policy == sync::kReferencePolicy) bsp = &p;
  }
  if (best == nullptr) {
    return Status::Internal("no candidate could be simulated: " +
                            advice.predictions.front().failure);
  }
  const std::string cluster = DescribeProfile(profile);
  if (bsp != nullptr && bsp->effective_s <= best->effective_s * (1 + kPreferBspWithin)) {
    advice.recommended = bsp->policy;
    advice.reason = best == bsp ? fmt::format("{}: bsp is predicted fastest to the target", cluster)
                                : fmt::format("{}: bsp is within {:.0f}% of the fastest ({})",
                                              cluster, kPreferBspWithin * 100, best->policy);
    return advice;
  }
  advice.recommended = best->policy;
  if (bsp != nullptr) {
    advice.reason = fmt::format("{}: {} is predicted {:.2f}x as fast to the target as bsp", cluster,
                                best->policy, bsp->effective_s / best->effective_s);
  } else {
    advice.reason = fmt::format("{}: {} is predicted fastest to the target of the candidates",
                                cluster, best->policy);
  }
  return advice;
}

}  // namespace dmlps::advise
