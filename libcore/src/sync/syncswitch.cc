#include "dmlps/sync/syncswitch.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

namespace dmlps::sync {

OfflineSwitch::OfflineSwitch(double fraction, double target, int64_t max_iterations)
    : fraction_(fraction), target_(target), max_iterations_(max_iterations) {}

std::string OfflineSwitch::Name() const { return fmt::format("sync-switch:{}", fraction_); }

std::optional<SwitchRequest> OfflineSwitch::AfterPush(const SwitchContext& context, WorkerId /*w*/,
                                                      const PushInfo& /*push*/) {
  // With a target, the accuracy decides (AfterEvaluation).
  if (target_ > 0 || context.running != kSyncSwitchFirst) return std::nullopt;
  const double at = std::ceil(fraction_ * static_cast<double>(max_iterations_));
  if (static_cast<double>(context.iteration) < at) return std::nullopt;
  return SwitchRequest{std::string(kSyncSwitchSecond), "iterations done",
                       static_cast<double>(context.iteration), at};
}

std::optional<SwitchRequest> OfflineSwitch::AfterEvaluation(const SwitchContext& context,
                                                            double accuracy) {
  if (target_ <= 0) return std::nullopt;
  if (!first_accuracy_) {
    first_accuracy_ = accuracy;
    if (fraction_ > 0) return std::nullopt;
  }
  if (context.running != kSyncSwitchFirst) return std::nullopt;
  // Progress toward the target; a target at or below the start is reached.
  const double span = target_ - *first_accuracy_;
  const double progress = span <= 0 ? 1.0 : (accuracy - *first_accuracy_) / span;
  if (progress < fraction_) return std::nullopt;
  return SwitchRequest{std::string(kSyncSwitchSecond), "accuracy progress", progress, fraction_};
}

OnlineSwitch::OnlineSwitch(int64_t num_workers) : recent_(num_workers) {}

double OnlineSwitch::Mean(WorkerId w) const {
  const std::deque<double>& times = recent_[w];
  if (static_cast<int64_t>(times.size()) < kWindow) return 0;
  return std::accumulate(times.begin(), times.end(), 0.0) / static_cast<double>(kWindow);
}

double OnlineSwitch::OthersMedian(const Policy& policy, WorkerId w) const {
  std::vector<double> means;
  for (WorkerId v = 0; v < policy.num_workers(); ++v) {
    if (v == w || !policy.joined(v)) continue;
    if (const double m = Mean(v); m > 0) means.push_back(m);
  }
  if (means.empty()) return 0;
  const size_t mid = means.size() / 2;
  std::nth_element(means.begin(), means.begin() + mid, means.end());
  if (means.size() % 2 == 1) return means[mid];
  const double upper = means[mid];
  return (upper + *std::max_element(means.begin(), means.begin() + mid)) / 2;
}

std::optional<SwitchRequest> OnlineSwitch::AfterPush(const SwitchContext& context, WorkerId w,
                                                     const PushInfo& push) {
  const double interval = push.cycle_s > 0 ? push.cycle_s : push.busy_s + push.comm_s;
  if (interval > 0) {
    std::deque<double>& times = recent_[w];
    times.push_back(interval);
    if (static_cast<int64_t>(times.size()) > kWindow) times.pop_front();
  }
  const double mine = Mean(w);
  const double others = OthersMedian(*context.policy, w);
  if (mine > 0 && others > 0) {
    const double ratio = mine / others;
    if (ratio > kFactor) {
      straggler_ = w;
      last_seen_iteration_ = context.iteration;
      if (context.running == kSyncSwitchFirst) {
        return SwitchRequest{std::string(kSyncSwitchSecond), fmt::format("worker {} straggles", w),
                             ratio, kFactor};
      }
    } else if (w == straggler_) {
      straggler_ = -1;  // back in step; calm from here on
      last_seen_iteration_ = context.iteration;
    }
  }
  if (context.running == kSyncSwitchSecond && straggler_ < 0 &&
      context.iteration - last_seen_iteration_ >= kCalmIterations) {
    return SwitchRequest{std::string(kSyncSwitchFirst), "no straggler",
                         static_cast<double>(context.iteration - last_seen_iteration_),
                         static_cast<double>(kCalmIterations)};
  }
  return std::nullopt;
}

void OnlineSwitch::WorkerGone(WorkerId w) {
  recent_[w].clear();
  if (w == straggler_) straggler_ = -1;
}

Status CheckSyncSwitch(const PolicyConfig& config) {
  if (!(config.switch_at >= 0 && config.switch_at <= 1)) {
    return Status::InvalidArgument("sync-switch needs --switch-at in [0, 1]");
  }
  if (!config.switch_online && config.job.target_accuracy <= 0 && config.job.max_iterations <= 0) {
    return Status::InvalidArgument(
        "sync-switch places --switch-at by the target accuracy or the iteration limit: give "
        "--target-accuracy or --max-iterations (or --switch-online)");
  }
  return Status::Ok();
}

std::unique_ptr<Policy> MakeSyncSwitch(const PolicyConfig& config) {
  std::unique_ptr<SwitchDecider> decider;
  if (config.switch_online) {
    decider = std::make_unique<OnlineSwitch>(config.job.workers);
  } else {
    decider = std::make_unique<OfflineSwitch>(config.switch_at, config.job.target_accuracy,
                                              config.job.max_iterations);
  }
  InnerPolicyMaker make = [config](std::string_view name, int64_t n) {
    PolicyConfig inner = config;
    inner.name = std::string(name);
    inner.job.workers = n;
    return MakePolicy(inner);
  };
  return std::make_unique<SwitchingPolicy>(config.job.workers, std::move(decider), std::move(make));
}

}  // namespace dmlps::sync
