// What auto reads of each worker's pushes (docs/auto-readings.md).
#include "dmlps/auto/worker_steps.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "auto/readings.h"
#include "dmlps/advise/trace_profile.h"
#include "dmlps/predict/replay.h"

namespace dmlps::autopolicy {

bool WorkerSteps::Measure(sync::WorkerId w, const sync::PushInfo& push) {
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
  // Changes are sought in computing and sending together: a worker's link
  // slowing down is a lasting change as its computing is.
  const std::vector<double> window(h.whole.begin(), h.whole.end());
  const int64_t first = h.steps - n;  // the window's first step
  // On lower quartiles, which move only when three steps in four do: steps
  // delayed now and then are no change (docs/auto-readings.md, "Each
  // worker's steps").
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

std::optional<advise::ClusterProfile> WorkerSteps::Profile(const sync::Policy& policy,
                                                           int64_t batch, bool known_shared,
                                                           int64_t* delayed) const {
  // Per live worker, its steps since its last lasting change.
  std::vector<std::vector<double>> per_sample, slowness, work;
  std::vector<std::vector<int64_t>> clock;
  std::vector<double> overhead, comm, shares;
  for (sync::WorkerId w = 0; w < policy.num_workers(); ++w) {
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
  // (Once read as shared, the cores stay shared: SharedCores.)
  const bool shared = advise::SharedCoresOf(shares) > 0 || known_shared;
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
  profile.batch = batch;
  profile.num_params = 1;
  profile.link_gbps = 0;
  profile.latency_s = common / 2;
  std::vector<advise::StepTimes> steps(per_sample.size());
  std::vector<DelayTally> tallies(per_sample.size());
  const double cluster_level = ClusterLevel(per_sample);
  for (size_t i = 0; i < per_sample.size(); ++i) {
    profile.workers.push_back(WorkerFrom(per_sample[i], clock[i], extra[i], batch, cluster_level,
                                         &steps[i], &tallies[i]));
    profile.workers.back().core_share = shares[i];
    if (shared) profile.workers.back().jitter = advise::LogSpread(work[i], kMaxJitter);
  }
  PoolDelays(tallies, &profile.workers);
  *delayed = 0;
  for (const DelayTally& t : tallies) *delayed += t.delayed;
  profile.rotation_s = advise::RotatingDelay(steps);
  return profile;
}

}  // namespace dmlps::autopolicy
