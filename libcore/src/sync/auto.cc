// The auto policy's decider: live measurements in, the advise engine's
// predictions out, a switch when it pays for itself.
#include "dmlps/sync/auto.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <system_error>
#include <utility>

#include "dmlps/advise/efficiency.h"
#include "dmlps/advise/trace_profile.h"
#include "dmlps/bench/experiment.h"
#include "dmlps/predict/replay.h"
#include "dmlps/sync/registry.h"

namespace dmlps::sync {
namespace {

// The most log-sd of noise a worker's steps are taken to have.
constexpr double kMaxJitter = 1;
// A step that had a core for less of its time than this is taken as this.
constexpr double kMinCoreShare = 0.01;
// A step reported as over this many times what the server saw it take
// (PushInfo::cycle_s: the step and both transfers) is no measurement.
constexpr double kMaxOverCycle = 10;

// Whether a push's step time can be read: a worker's clock broken, or a
// worker lying, reports none, no number, no samples, or a step far longer
// than the server saw.
bool Readable(const PushInfo& push, int64_t samples) {
  return samples >= 1 && push.busy_s > 0 && std::isfinite(push.busy_s) &&
         !(push.cycle_s > 0 && push.busy_s > kMaxOverCycle * push.cycle_s);
}

// Whether a switch from `running` into `best` gives up tolerance of a
// straggler: into BSP, whose every round waits for the slowest push,
// from any other candidate (each of which leaves it behind, or, LB-BSP,
// rebalances around it).
bool GivesUpTolerance(std::string_view running, std::string_view best) {
  return best == kReferencePolicy && running != kReferencePolicy;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  return values[mid];
}

// The last `n` values of `values`.
template <typename T>
std::vector<T> Last(const std::deque<T>& values, size_t n) {
  n = std::min(n, values.size());
  return std::vector<T>(values.end() - static_cast<std::ptrdiff_t>(n), values.end());
}

// What a step is measured against to tell whether it was delayed (one
// kDelayFactor times it or more): the lower quartile of the worker's own
// steps, so that a worker delayed now and then is not slow, also where
// chance puts most of its few steps behind a delay (four of six in one
// worker in sixty at one delay in five, where the lower median of all six
// is a delayed step). The quartile is delayed when five of six are, which
// chance does to one worker in 600 at one delay in five: at 256 workers
// one such worker read as "steadily 202x slower" and hid the delays from
// the first decision. Its fastest step then shows what it does undelayed:
// where that is under kDelayFactor times the cluster's level
// (`cluster_level`, the workers' median level; 0: none), it is the
// reference. A steady straggler has no step at the others' level.
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

// The workers' median level, each worker's level against its own steps
// alone (the lower median of the workers').
double ClusterLevel(const std::vector<std::vector<double>>& per_sample) {
  std::vector<double> levels;
  for (const std::vector<double>& w : per_sample)
    levels.push_back(LevelOf(w, DelayReference(w, 0)));
  return predict::LowerQuantile(levels, 0, static_cast<int64_t>(levels.size()), 0.5);
}

// A worker's delayed steps: how many of how many, and their seconds beyond
// its level.
struct DelayTally {
  int64_t delayed = 0;
  int64_t steps = 0;
  double excess_s = 0;
};

// A share of steps delayed, as advise::WorkerProfile's delay_prob.
double DelayShare(int64_t delayed, int64_t steps) {
  return std::min(0.9,
                  static_cast<double>(delayed) / static_cast<double>(std::max<int64_t>(1, steps)));
}

// One worker's profile from its per-sample times, plus `extra_s` per step
// (its time beyond computing above the quickest worker's); the steps'
// clocks (`clock`, one each) and times into `steps`, its delays into
// `tally`; `cluster_level` as DelayReference's.
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

// Where the workers' counts of delayed steps are what one rate for all
// would give (binomial: the dispersion statistic within three standard
// deviations of its mean), every worker is given that rate and the mean
// delay: with few steps each, chance spreads one rate wide. 256 workers
// delayed one step in five, six steps each, read as rates from 0 to 83%;
// the workers delayed most then bounded SSP's clocks as stragglers would,
// and ssp:3 was predicted 15% slower than BSP where 28 steps each read it
// 8% faster and it was. A worker delayed far more than the others keeps
// its own rate.
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

// The share of a step's computing that had a core (advise::WorkerProfile's
// core_share), in (0, 1]; 1 when the push does not tell.
double CoreShare(const PushInfo& push) {
  if (!(push.compute_s > 0) || !(push.run_wait_s > 0)) return 1;
  return std::clamp(1 - push.run_wait_s / push.compute_s, kMinCoreShare, 1.0);
}

// What a decision measured, in words: each worker's step (up to eight of
// them), else the spread.
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

// What a `wait:` decision must see again: the same choice for the same
// kind of cause. On a busy host a burst moved from one worker to another
// and read as "transient delays on worker-2", then "worker-3 steadily 1.5x
// slower", both pointing to backup:1, and an even run switched.
std::string Awaited(std::string_view policy, const advise::ClusterProfile& profile) {
  return fmt::format("{} for {}", policy, advise::FeatureKind(profile));
}

const advise::Prediction* Find(const advise::Advice& advice, std::string_view policy) {
  for (const advise::Prediction& p : advice.predictions) {
    if (p.policy == policy && p.failure.empty()) return &p;
  }
  return nullptr;
}

}  // namespace

std::vector<std::string> AutoCandidates(int64_t num_workers, std::string_view model,
                                        int64_t batch) {
  if (num_workers < 2) return {"bsp", "ssp:3", "lbbsp"};
  // Two workers: backup:1 would keep one push a round of two.
  if (num_workers < 3) return {"bsp", "backup:1", "ssp:3", "lbbsp"};
  // backup:1 first, so that auto starts under it: before its first
  // decision it runs uninformed, and a backup worker's round waits for no
  // one slow worker. Near the target a policy's iterations to it are the
  // policy's own draw whenever it came in (docs/auto.md): a
  // start under BSP that moved to backup:1 when a straggler came at
  // iteration 150 took 220-260 iterations in 30 runs of 30, backup:1's
  // own 200-250, plus BSP's even rounds and ten more beside the
  // straggler. An even cluster keeps it there: BSP is predicted faster,
  // but under AutoDecider::kIntoBsp times as fast.
  std::vector<std::string> candidates = {"backup:1", "bsp"};
  // More backup workers where the job's efficiency table has a row of
  // their own for this many workers: priced by backup:1's row they would
  // look as efficient for fewer gradients a round. Four workers of
  // mlp:128 on two shared cores: under transient delays backup:3 took
  // 0.56-0.64x backup:1's time to the target, under round-robin sleeps
  // 0.79-0.89x, and auto with them moved there at iteration 10-14 and
  // stayed under backup:1 elsewhere (docs/auto-goals-december-2.md).
  const advise::EfficiencyTable table = advise::BuiltInEfficiency(model, batch, num_workers);
  if (table.workers == num_workers) {
    for (int64_t b = 2; b < num_workers; ++b) {
      const std::string entry = fmt::format("backup:{}", b);
      const bool own =
          std::any_of(table.rows.begin(), table.rows.end(),
                      [&](const advise::Efficiency& row) { return row.policy == entry; });
      if (own) candidates.push_back(entry);
    }
  }
  candidates.insert(candidates.end(), {"ssp:3", "lbbsp"});
  // Where the job's table, learned on as many workers, names where auto
  // went on that job, it starts there instead: on mlp:128 at batch 256 on
  // four workers of two cores, every run left backup:1 for backup:2 or
  // backup:3, its rounds until then 1.2-2.7x as long as those after.
  const auto start = std::find(candidates.begin(), candidates.end(), table.auto_start);
  if (table.workers == num_workers && start != candidates.end()) {
    std::rotate(candidates.begin(), start, start + 1);
  }
  return candidates;
}

Status CheckAutoCandidate(std::string_view entry, int64_t num_workers, int64_t batch) {
  PolicyConfig config;
  config.name = "auto";
  config.num_workers = num_workers;
  config.batch = batch;
  return CheckSwitchCandidate(entry, config);
}

AutoDecider::AutoDecider(int64_t num_workers, Options options)
    : options_(std::move(options)),
      advisor_(advise::BuiltInEfficiency(options_.model, options_.batch, num_workers)),
      history_(num_workers),
      host_cores_(num_workers, 0),
      running_(AutoDecider::Initial()),
      budget_(options_.predict_share, kPredictAllowanceMs) {}

std::string AutoDecider::Initial() const {
  return options_.candidates.empty() ? "bsp" : options_.candidates.front();
}

bool AutoDecider::Measure(WorkerId w, const PushInfo& push) {
  History& h = history_[w];
  const int64_t samples = push.batch > 0 ? push.batch : push.samples;
  if (!Readable(push, samples)) {
    if (++h.unreadable >= kMinSteps && !std::exchange(h.warned, true)) {
      spdlog::warn(
          "auto: worker {} reported {} steps in a row whose time it cannot read (the last: {} s "
          "for {} samples, {:.3g} s as the server saw it); its decisions leave the worker out "
          "until it reports one it can",
          w, h.unreadable, push.busy_s, samples, push.cycle_s);
    }
    return false;
  }
  h.unreadable = 0;
  // The first steps include loading and connecting.
  if (++h.steps <= advise::kWarmupSteps) return false;
  h.per_sample.push_back(push.busy_s / static_cast<double>(samples));
  h.core_share.push_back(CoreShare(push));
  h.comm.push_back(std::max(0.0, push.comm_s));
  h.whole.push_back((push.busy_s + h.comm.back()) / static_cast<double>(samples));
  const double computed = push.compute_s > 0 ? push.compute_s : push.busy_s;
  h.slowness.push_back(std::max(1.0, push.busy_s / computed));
  h.work.push_back(computed * h.core_share.back() / static_cast<double>(samples));
  h.clock.push_back(push.clock);
  const double beyond = push.cycle_s > push.busy_s ? push.cycle_s - push.busy_s : push.comm_s;
  h.overhead.push_back(std::max(0.0, beyond));
  if (static_cast<int64_t>(h.per_sample.size()) > kWindow) {
    h.per_sample.pop_front();
    h.core_share.pop_front();
    h.comm.pop_front();
    h.whole.pop_front();
    h.slowness.pop_front();
    h.work.pop_front();
    h.overhead.pop_front();
    h.clock.pop_front();
  }
  const auto n = static_cast<int64_t>(h.per_sample.size());
  if (n < 2 * predict::kChangeWindow) return false;
  // A worker's link slowing down is a lasting change as its computing is
  // (a link capped to 200 Mbit/s from iteration 150 made its steps 2.5x
  // longer, and waited for the next periodic decision, at 175-180).
  const std::vector<double> window(h.whole.begin(), h.whole.end());
  const int64_t first = h.steps - n;  // the window's first step
  // Step times delayed now and then move a mean of logs by a factor of two
  // and more when the delays are long, and would count as changes over and
  // over, holding every decision back and taking delays for the level; the
  // lower quartile moves only when three steps in four do, with the level.
  for (const int64_t c :
       predict::FindLastingChanges(window, predict::ChangeLevel::kLowerQuartile)) {
    // The same change seen again as the window slides is no new one.
    if (first + c > h.change_at + predict::kChangeWindow) {
      h.change_at = first + c;
      return true;
    }
  }
  return false;
}

std::optional<advise::ClusterProfile> AutoDecider::Profile(const Policy& policy,
                                                           int64_t* delayed) const {
  // Per live worker, its steps since its last lasting change.
  std::vector<std::vector<double>> per_sample, slowness, work;
  std::vector<std::vector<int64_t>> clock;
  std::vector<double> overhead, comm, shares;
  for (WorkerId w = 0; w < policy.num_workers(); ++w) {
    // One whose steps cannot be read (Measure) would hold every decision back.
    if (!policy.joined(w) || LeftOut(w)) continue;
    const History& h = history_[w];
    const int64_t since = std::min<int64_t>(h.steps - h.change_at, h.per_sample.size());
    if (since < kMinSteps) return std::nullopt;
    per_sample.push_back(Last(h.per_sample, since));
    clock.push_back(Last(h.clock, since));
    overhead.push_back(Median(Last(h.overhead, since)));
    comm.push_back(Median(Last(h.comm, since)));
    slowness.push_back(Last(h.slowness, since));
    work.push_back(Last(h.work, since));
    shares.push_back(Median(Last(h.core_share, since)));
  }
  if (per_sample.empty()) return std::nullopt;
  // The time beyond computing that every worker's step takes (handling the
  // model, the transfers, waiting for a core on a busy host) does not grow
  // with the batch: it is the links' latency, two messages per step. What
  // a worker takes beyond that (a slower link) is part of its step.
  const double common = *std::min_element(overhead.begin(), overhead.end());
  std::vector<double> extra;
  for (const double o : overhead) extra.push_back(o - common);
  // (Once read as shared, the cores stay shared: ReadCores.)
  const bool shared = advise::SharedCoresOf(shares) > 0 || cores_ > 0 || CrowdedCores(policy) > 0;
  if (shared) {
    // On shared cores every worker's step is the host's work, at the
    // typical share of a core, times the worker's steady slowness (what it
    // sleeps beyond computing), plus a delayed step's pause as seconds
    // (advise::SharedSteps); what it waited for a core, computing or
    // not, and the few percent its work differs from the others' from
    // step to step are the host's and the step's noise. What a worker
    // takes beyond the others is its pushes' longer sending (a slower link).
    std::vector<double> host_work;
    for (const std::vector<double>& w : work) host_work.insert(host_work.end(), w.begin(), w.end());
    const double per_sample_s = Median(host_work) / Median(shares);
    const double quickest = *std::min_element(comm.begin(), comm.end());
    for (size_t i = 0; i < per_sample.size(); ++i) {
      per_sample[i] = advise::SharedSteps(per_sample[i], slowness[i], per_sample_s);
      extra[i] = comm[i] - quickest;
    }
  }
  advise::ClusterProfile profile;
  profile.batch = options_.batch;
  profile.num_params = 1;
  profile.link_gbps = 0;
  profile.latency_s = common / 2;
  std::vector<advise::StepTimes> steps(per_sample.size());
  std::vector<DelayTally> tallies(per_sample.size());
  const double cluster_level = ClusterLevel(per_sample);
  for (size_t i = 0; i < per_sample.size(); ++i) {
    profile.workers.push_back(WorkerFrom(per_sample[i], clock[i], extra[i], options_.batch,
                                         cluster_level, &steps[i], &tallies[i]));
    profile.workers.back().core_share = shares[i];
    if (shared) profile.workers.back().jitter = advise::LogSpread(work[i], kMaxJitter);
  }
  PoolDelays(tallies, &profile.workers);
  *delayed = 0;
  for (const DelayTally& t : tallies) *delayed += t.delayed;
  profile.rotation_s = advise::RotatingDelay(steps);
  return profile;
}

std::optional<double> AutoDecider::ProgressLeft() const {
  if (!(options_.target > 0 && first_accuracy_ && options_.target > *first_accuracy_ &&
        last_accuracy_ > *first_accuracy_)) {
    return std::nullopt;
  }
  const double p = (last_accuracy_ - *first_accuracy_) / (options_.target - *first_accuracy_);
  if (p >= 1) return 0.0;
  return std::max(progress_, 1.0) * (1 - p) / p;
}

double AutoDecider::Remaining(int64_t iteration) const {
  if (const std::optional<double> left = ProgressLeft()) {
    if (*left <= 0) return 0;
    // At least until the next periodic decision, and at least as many as
    // done so far: the accuracy climbs fast, then crawls to the target (the
    // default job reads 0.80 at iteration 30 and crosses 0.85 near 200),
    // so that its progress says "almost there" for most of the run (10
    // left at iteration 30) and no switch would pay; near the target it
    // often lies on a plateau (0.841-0.852 over sixty iterations for a
    // target of 0.85) and says so for tens of iterations.
    return std::max({*left, static_cast<double>(std::max<int64_t>(1, options_.every)), progress_});
  }
  if (options_.max_iterations > 0) {
    return static_cast<double>(std::max<int64_t>(0, options_.max_iterations - iteration)) /
           running_efficiency_;
  }
  return std::max(progress_, kMinRemaining);
}

double AutoDecider::SwitchHorizon(double remaining, double efficiency, bool stale) const {
  const auto every = static_cast<double>(std::max<int64_t>(1, options_.every));
  const std::optional<double> left = ProgressLeft();
  if (!left || remaining <= *left || !(efficiency > 0)) return remaining;
  if (stale && efficiency > running_efficiency_) {
    // A policy of stale gradients that needs more iterations than the
    // running one gains over no more than the accuracy says is left:
    // entered on a model all but trained, its staler gradients first cost
    // accuracy (256 workers, a switch into ssp:3 an iteration before BSP's
    // target: 80 and 470 iterations more). One that needs more iterations
    // for fewer samples a round (backup:1, 1.02-1.15x in real runs) is
    // counted as the others.
    return *left < every ? std::min(every / efficiency, *left) : *left;
  }
  // A floor speaks: `remaining` iterations of the policy switched to make
  // remaining / efficiency of BSP's progress; a switch into a policy that
  // needs more iterations (SSP) gains over less progress.
  return remaining / efficiency;
}

std::optional<SwitchRequest> AutoDecider::AfterPush(const SwitchContext& context, WorkerId w,
                                                    const PushInfo& push) {
  if (Measure(w, push)) change_seen_ = true;
  if (!first_push_) first_push_ = std::chrono::steady_clock::now();
  if (context.iteration == last_iteration_) return std::nullopt;
  // A round boundary: the first push since the iteration moved on.
  if (last_iteration_ >= 0) {
    progress_ += static_cast<double>(context.iteration - last_iteration_) / running_efficiency_;
  }
  last_iteration_ = context.iteration;
  // One decision at a time: none starts while predictions are in flight.
  if (in_flight_) return Collect(context);
  const bool changed = change_seen_ && context.iteration >= last_decided_ + kMinGap;
  if (context.iteration < next_due_ && !changed) return std::nullopt;
  const std::chrono::duration<double, std::milli> since_first =
      std::chrono::steady_clock::now() - *first_push_;
  if (!budget_.Allows(since_first.count())) {
    return std::nullopt;  // due, at the first boundary the budget allows
  }
  int64_t delayed = 0;
  const std::optional<advise::ClusterProfile> profile = Profile(*context.policy, &delayed);
  if (!profile) return std::nullopt;  // not enough steps measured yet
  const bool after_change = change_seen_;
  change_seen_ = false;
  last_decided_ = context.iteration;
  next_due_ = context.iteration + std::max<int64_t>(1, options_.every);
  return Decide(context, *profile, delayed, after_change);
}

std::optional<SwitchRequest> AutoDecider::AfterEvaluation(const SwitchContext& /*context*/,
                                                          double accuracy) {
  if (!first_accuracy_) first_accuracy_ = accuracy;
  last_accuracy_ = accuracy;
  return std::nullopt;
}

std::optional<SwitchRequest> AutoDecider::Decide(const SwitchContext& context,
                                                 advise::ClusterProfile profile, int64_t delayed,
                                                 bool after_change) {
  ReadCores(*context.policy, after_change, &profile);
  Decision d;
  d.iteration = context.iteration;
  d.measured = DescribeMeasured(profile);
  for (WorkerId w = 0; w < context.policy->num_workers(); ++w) {
    if (!context.policy->joined(w) || !LeftOut(w)) continue;
    d.measured += d.measured.find("; left out") == std::string::npos
                      ? fmt::format("; left out (step times unreadable): worker-{}", w)
                      : fmt::format(", worker-{}", w);
  }
  d.remaining = Remaining(context.iteration);
  advise::AdvisorOptions options;
  options.candidates = options_.candidates;
  options.iterations =
      advise::ReadsDelays(profile) ? options_.delays_sim_iterations : options_.sim_iterations;
  auto predict = [advisor = &advisor_, profile, options] {
    const auto start = std::chrono::steady_clock::now();
    Result<advise::Advice> advice = advisor->Advise(profile, options);
    return std::make_pair(std::move(advice), std::chrono::duration<double, std::milli>(
                                                 std::chrono::steady_clock::now() - start)
                                                 .count());
  };
  if (options_.background) {
    // Only this thread touches advisor_ while the predictions are made
    // there: no other decision starts until Collect has them.
    try {
      in_flight_ =
          InFlight{std::async(std::launch::async, predict), profile, delayed, std::move(d)};
      return std::nullopt;
    } catch (const std::system_error&) {
      // No thread to be had: decide here, as without background.
    }
  }
  auto [advice, ms] = predict();
  d.decide_ms = ms;
  budget_.Spend(ms);
  return Finish(context, profile, delayed, advice, std::move(d));
}

std::optional<SwitchRequest> AutoDecider::Collect(const SwitchContext& context) {
  if (in_flight_->advice.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    return std::nullopt;
  }
  InFlight done = std::move(*in_flight_);
  in_flight_.reset();
  auto [advice, ms] = done.advice.get();
  done.decision.decide_ms = ms;
  budget_.Spend(ms);
  if (context.iteration != done.decision.iteration) {
    // Chosen now, on what was read then.
    done.decision.measured =
        fmt::format("at iteration {}: {}", done.decision.iteration, done.decision.measured);
    done.decision.iteration = context.iteration;
  }
  return Finish(context, done.profile, done.delayed, advice, std::move(done.decision));
}

std::optional<SwitchRequest> AutoDecider::Finish(const SwitchContext& context,
                                                 const advise::ClusterProfile& profile,
                                                 int64_t delayed,
                                                 const Result<advise::Advice>& advice, Decision d) {
  d.running = running_;
  d.chosen = running_;
  std::optional<SwitchRequest> request;
  if (!advice.ok()) {
    pending_ = {};
    d.reason = "no prediction, staying: " + advice.status().message();
  } else {
    for (const advise::Prediction& p : advice->predictions) {
      if (p.failure.empty()) d.predicted.emplace_back(p.policy, p.effective_s);
    }
    request = Choose(context, profile, delayed, *advice, &d);
    informed_ = true;
  }
  if (request) left_.push_back(running_);
  decisions_.push_back(std::move(d));
  return request;
}

int64_t AutoDecider::ServerHostCores(const Policy& policy, int64_t* live) const {
  std::vector<int64_t> host_cores;
  for (WorkerId w = 0; w < policy.num_workers(); ++w) {
    if (policy.joined(w)) host_cores.push_back(host_cores_[w]);
  }
  if (live != nullptr) *live = static_cast<int64_t>(host_cores.size());
  return advise::CommonHostCores(host_cores);
}

int64_t AutoDecider::CrowdedCores(const Policy& policy) const {
  int64_t live = 0;
  const int64_t cores = ServerHostCores(policy, &live);
  return live > cores ? cores : 0;
}

void AutoDecider::ReadCores(const Policy& policy, bool after_change,
                            advise::ClusterProfile* profile) {
  // Workers all on the server's host share at most its cores: read as
  // more, auto stayed under backup:1 60-100 iterations before a reading of
  // 2 moved it to backup:2. More workers there than cores share them
  // whatever their steps read: four workers on two cores, each paused 50
  // ms after one step in five, left each other a core most of the time,
  // and 23 of 66 decisions read them as on cores of their own, their
  // delays as twice as frequent and half as long (steps that waited for a
  // core counting as delayed), backup:3 as 1.04-1.12x as fast as backup:2
  // where it took 0.78-0.87x its time to the target.
  const int64_t host = ServerHostCores(policy);
  int64_t read = advise::SharedCoresAtMost(*profile, host);
  if (read == 0) read = CrowdedCores(policy);
  if (read == 0 && cores_ == 0) return;
  // Other work on the host that took a core and left it: the workers'
  // steps changed speed lastingly, and the reading at this decision or the
  // next (the first, right after one worker's change, still holds the
  // others' steps before theirs), at most the host's cores, is the host's
  // now. Held at the fewest, an even run that read one core while the
  // host was busy (its steps 3.3 ms, then 8) moved to backup:3 at
  // iteration 232 and stayed there: 390 iterations.
  const bool recent_change = after_change || changed_before_;
  changed_before_ = after_change;
  if (recent_change && host > 0 && read > cores_) cores_ = read;
  // A host does not gain cores. A reading of more than before is workers
  // that computed less at once: four workers on two cores read 2 under
  // backup:2 and 3 under backup:1, and predictions on 3 cores chose
  // backup:1, on 2 backup:2, so that an even cluster's run went back and
  // forth between them. Once shared, the cores stay shared: the reading
  // flips with the policy running too (LB-BSP's and backup:3's workers
  // were read at times as on cores of their own).
  cores_ = cores_ == 0 ? read : std::min(cores_, read > 0 ? read : cores_);
  profile->cores = cores_;
}

std::optional<SwitchRequest> AutoDecider::Choose(const SwitchContext& context,
                                                 const advise::ClusterProfile& profile,
                                                 int64_t delayed, const advise::Advice& advice,
                                                 Decision* d) {
  // This decision's wait, if it waits, becomes the latest; the older of
  // the two before it is forgotten.
  const std::array<std::string, 2> pending = pending_;
  pending_ = {std::string(), pending[0]};
  const advise::Prediction* now = Find(advice, running_);
  const advise::Prediction* best = Find(advice, advice.recommended);
  if (now != nullptr) running_efficiency_ = now->efficiency;
  if (best == nullptr || best == now) {
    d->reason = "stay: " + advice.reason;
    return std::nullopt;
  }
  const double now_s = now != nullptr ? now->effective_s : std::numeric_limits<double>::max();
  double slowest = 0;
  for (const advise::WorkerProfile& w : profile.workers) slowest = std::max(slowest, w.step_s);
  d->cost_s = slowest + best->iteration_s;
  const double horizon =
      SwitchHorizon(d->remaining, best->efficiency, AnswersEachPush(best->policy));
  d->gain_s = now != nullptr ? horizon * (now_s - best->effective_s) : horizon;
  const double speedup = now_s / best->effective_s;
  const double bar = Bar(best->policy);
  if (now != nullptr && speedup < bar) {
    d->reason = GivesUpTolerance(running_, best->policy)
                    ? fmt::format(
                          "stay: {} is predicted {:.2f}x as fast, under the {:.3g}x a "
                          "switch from {} into a policy that waits for every push needs",
                          best->policy, speedup, bar, running_)
                    : fmt::format(
                          "stay: {} is predicted {:.2f}x as fast as {}, under the {:.3g}x "
                          "a switch{} needs",
                          best->policy, speedup, running_, bar,
                          Returns(best->policy) ? " back into a policy left before" : "");
    return std::nullopt;
  }
  if (d->gain_s <= kPayback * d->cost_s) {
    d->reason = fmt::format(
        "stay: {} would save {:.3g} s over {:.0f} iterations left, not {}x the switch's {:.3g} s",
        best->policy, d->gain_s, horizon, kPayback, d->cost_s);
    return std::nullopt;
  }
  if (speedup < kConfirmBelow &&
      (cores_ > 0 || informed_ || (advise::ReadsDelays(profile) && delayed < kFewDelays)) &&
      std::find(pending.begin(), pending.end(), Awaited(best->policy, profile)) == pending.end()) {
    // A neighbour's burst holds a worker back 1.2-2x for a few rounds
    // and reads as a marginal gain: it must be seen again, at one of the
    // next two decisions (the first kMinGap iterations on), before the
    // run pays twice, whenever the running policy was chosen on a
    // reading (after the first decision) or the workers share cores with
    // other work. Two of three, not two in a row: on four workers of two
    // cores an even cluster read backup:2 1.19-1.41x as fast as backup:1
    // at every other decision and BSP marginally faster at those between
    // (the time beyond computing moving 1-4 ms from one reading to the
    // next), and one run stayed under backup:1 until iteration 183. The
    // first reading on cores of their own is taken at once, but for one
    // of delays read off few steps: until then auto ran uninformed, and
    // a short run has few decisions to spare; a rate of 8 delayed steps
    // in 24, though, is one to within a third (an even cluster's start,
    // four workers each a third of their first six steps 2x slow, read as
    // delays everywhere, moved one run in nine to backup:1, "1.08x as
    // fast").
    // 256 workers read 300 in 1536 steps, and move at once.
    pending_[0] = Awaited(best->policy, profile);
    next_due_ = context.iteration + kMinGap;
    d->reason = fmt::format(
        "wait: {} is predicted {:.2f}x as fast, under {}x: switches if one of the next two "
        "decisions agrees; {}",
        best->policy, speedup, kConfirmBelow, advice.reason);
    return std::nullopt;
  }
  if (Returns(best->policy)) ++returns_;
  d->chosen = best->policy;
  chosen_efficiency_ = best->efficiency;
  pending_ = {};
  d->reason = fmt::format("switch: saves {:.3g} s over {:.0f} iterations left for {:.3g} s; {}",
                          d->gain_s, horizon, d->cost_s, advice.reason);
  return SwitchRequest{best->policy, d->reason, speedup, bar};
}

bool AutoDecider::Returns(std::string_view policy) const {
  return cores_ > 0 && std::find(left_.begin(), left_.end(), policy) != left_.end();
}

double AutoDecider::Bar(std::string_view policy) const {
  return AutoSwitchBar(running_, policy, Returns(policy) ? returns_ + 1 : 0);
}

double AutoSwitchBar(std::string_view running, std::string_view to, int returns) {
  const double bar =
      GivesUpTolerance(running, to) ? AutoDecider::kIntoBsp : 1 / (1 - AutoDecider::kMinGain);
  return bar * std::pow(AutoDecider::kReturnBar, returns);
}

void AutoDecider::Switched(std::string_view now_running) {
  running_ = std::string(now_running);
  running_efficiency_ = chosen_efficiency_;
}

std::vector<Decision> AutoDecider::TakeDecisions() { return std::exchange(decisions_, {}); }

std::unique_ptr<Policy> MakeAuto(const PolicyConfig& config) {
  AutoDecider::Options options;
  options.candidates = config.candidates.empty()
                           ? AutoCandidates(config.num_workers, config.model, config.batch)
                           : config.candidates;
  options.batch = config.batch;
  options.every = config.decide_every;
  options.target = config.target_accuracy;
  options.max_iterations = config.max_iterations;
  options.model = config.model;
  // In the push, a decision holds up the server's rounds, and 40 simulated
  // iterations are what it can afford: under transient delays advise's 300
  // moved auto to backup:3 at iteration 29-51 rather than 45-122, but each
  // decision then took 8.5-11 ms (median) rather than 1.3-2.5, which on
  // rounds of 8-10 ms cost what the earlier move gained (three runs: 1.22x
  // the fixed backup:3's time, against 1.18x before). In the background
  // no round waits for them, but they take a core from the workers: 300
  // everywhere took 25-45 ms a decision on an even cluster of four workers
  // on two cores, deciding every 10 iterations, its iterations 1.1-1.3x as
  // long as the fixed policy's. Elsewhere 40 and 1000 agree within 4%.
  options.background = config.decide_in_background;
  if (options.background) {
    options.delays_sim_iterations = advise::kSimIterations;
    options.predict_share = AutoDecider::kPredictShare;
  }
  const int64_t n = config.num_workers;
  InnerPolicyMaker make = [config](std::string_view name, int64_t workers) {
    bench::Experiment job;
    job.workers = workers;
    job.batch = config.batch;
    job.target = config.target_accuracy;
    job.max_iterations = config.max_iterations;
    Result<PolicyConfig> inner = bench::PolicyFor(name, job);
    if (!inner.ok()) return Result<std::unique_ptr<Policy>>(inner.status());
    return MakePolicy(*inner);
  };
  return std::make_unique<SwitchingPolicy>(n, std::make_unique<AutoDecider>(n, std::move(options)),
                                           std::move(make), config.batch);
}

}  // namespace dmlps::sync
