#include "dmlps/sync/dssp.h"

#include <algorithm>
#include <cmath>

namespace dmlps::sync {

DsspPolicy::DsspPolicy(int64_t num_workers, int64_t low, int64_t high)
    : Policy(num_workers),
      low_(low),
      high_(high),
      bound_(num_workers, low),
      interval_(num_workers, 0) {}

std::string DsspPolicy::Name() const {
  return "dssp:" + std::to_string(low_) + "-" + std::to_string(high_);
}

void DsspPolicy::OnPush(WorkerId w, const PushInfo& push, Actions* out) {
  // The iteration time as the server saw it, else as the worker timed it.
  const double interval = push.cycle_s > 0 ? push.cycle_s : push.busy_s + push.comm_s;
  if (interval > 0) interval_[w] = interval;
  if (push.usable && push.samples > 0) {
    out->push_back(Stage{w, 1.0});
    EmitApply(1.0 / static_cast<double>(joined_count()), out);
  }
  bound_[w] = ChooseBound(w);
  MaybeRelease(out);
}

int64_t DsspPolicy::ChooseBound(WorkerId w) const {
  // The slowest live worker (the lowest clock; the longest iteration among
  // those on it) and how many of w's iterations fit into one of its.
  double slowest = 0;
  for (WorkerId v = 0; v < num_workers(); ++v) {
    if (joined(v) && clock(v) == MinClock()) slowest = std::max(slowest, interval_[v]);
  }
  if (slowest <= 0 || interval_[w] <= 0) return low_;
  const double fit = std::floor(slowest / interval_[w]);
  return low_ + std::clamp<int64_t>(static_cast<int64_t>(fit), 0, high_ - low_);
}

void DsspPolicy::MaybeRelease(Actions* out) {
  if (MinClock() == released_at_min_clock_) return;
  released_at_min_clock_ = MinClock();
  ReleaseHeld(out);
}

void DsspPolicy::OnJoin(WorkerId w, const WorkerInfo& /*info*/, Actions* /*out*/) {
  bound_[w] = low_;
  interval_[w] = 0;
}

void DsspPolicy::OnLeave(WorkerId /*w*/, Actions* out) { MaybeRelease(out); }

void DsspPolicy::OnAddWorker() {
  bound_.push_back(low_);
  interval_.push_back(0);
}

}  // namespace dmlps::sync
