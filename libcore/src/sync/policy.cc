#include "dmlps/sync/policy.h"

#include <algorithm>
#include <limits>

namespace dmlps::sync {

void Policy::WorkerJoined(WorkerId w, Actions* out) {
  workers_[w].joined = true;
  workers_[w].clock = 0;
  // A join can lower the minimum clock but never release anyone; nothing to emit.
  (void)out;
}

void Policy::PushArrived(WorkerId w, const PushInfo& push, Actions* out) {
  WorkerState& state = workers_[w];
  if (!state.joined) {
    out->push_back(Action::Drop(w, "push from a worker that has not joined"));
    return;
  }
  if (push.clock != state.clock) {
    out->push_back(Action::Drop(w, "push for clock " + std::to_string(push.clock) +
                                       ", expected clock " + std::to_string(state.clock)));
    return;
  }
  if (std::string why = Refuse(w, push); !why.empty()) {
    out->push_back(Action::Drop(w, std::move(why)));
    return;
  }
  ++state.clock;
  OnPush(w, push, out);
}

void Policy::PullRequested(WorkerId w, Actions* out) {
  if (MayStart(w)) {
    workers_[w].pull_held = false;
    out->push_back(Action::ReplyModel(w));
  } else {
    workers_[w].pull_held = true;
    out->push_back(Action::Hold(w));
  }
}

int64_t Policy::MinClock() const {
  int64_t min_clock = std::numeric_limits<int64_t>::max();
  for (const WorkerState& s : workers_) {
    if (s.joined) min_clock = std::min(min_clock, s.clock);
  }
  return min_clock == std::numeric_limits<int64_t>::max() ? 0 : min_clock;
}

int64_t Policy::joined_count() const {
  return std::count_if(workers_.begin(), workers_.end(),
                       [](const WorkerState& s) { return s.joined; });
}

void Policy::EmitApply(double scale, Actions* out) {
  out->push_back(Action::Apply(scale));
  ++version_;
}

void Policy::ReleaseHeld(Actions* out) {
  for (WorkerId w = 0; w < num_workers(); ++w) {
    if (workers_[w].pull_held && MayStart(w)) {
      workers_[w].pull_held = false;
      out->push_back(Action::ReplyModel(w));
    }
  }
}

std::string BspPolicy::Refuse(WorkerId w, const PushInfo& push) const {
  // The BSP invariant: a gradient applied at version v was computed on v.
  if (push.base_version != version()) {
    return "gradient computed on version " + std::to_string(push.base_version) +
           ", the model is at version " + std::to_string(version());
  }
  return {};
}

void BspPolicy::OnPush(WorkerId w, const PushInfo& push, Actions* out) {
  if (push.usable && push.samples > 0) {
    out->push_back(Action::Stage(w, static_cast<double>(push.samples)));
    staged_samples_ += push.samples;
  }
  if (++arrived_ < joined_count()) return;
  // Σ_i (b_i / B) g_i: each mean gradient weighted by its samples, over their total.
  if (staged_samples_ > 0) EmitApply(1.0 / static_cast<double>(staged_samples_), out);
  ++round_;
  arrived_ = 0;
  staged_samples_ = 0;
  ReleaseHeld(out);
}

bool BspPolicy::MayStart(WorkerId w) const { return clock(w) <= round_; }

std::string SspPolicy::Name() const {
  return staleness_ < 0 ? "asp" : "ssp:" + std::to_string(staleness_);
}

void SspPolicy::OnPush(WorkerId w, const PushInfo& push, Actions* out) {
  if (push.usable && push.samples > 0) {
    out->push_back(Action::Stage(w, 1.0));
    EmitApply(1.0 / static_cast<double>(joined_count()), out);
  }
  if (staleness_ >= 0) ReleaseHeld(out);
}

bool SspPolicy::MayStart(WorkerId w) const {
  return staleness_ < 0 || clock(w) - MinClock() <= staleness_;
}

Result<std::unique_ptr<Policy>> MakePolicy(const PolicyConfig& config) {
  if (config.num_workers < 1) return Status::InvalidArgument("a run needs at least one worker");
  if (config.name == "bsp") return std::unique_ptr<Policy>(new BspPolicy(config.num_workers));
  if (config.name == "asp") return std::unique_ptr<Policy>(new SspPolicy(config.num_workers, -1));
  if (config.name == "ssp") {
    if (config.staleness < 0) return Status::InvalidArgument("ssp needs a staleness of 0 or more");
    return std::unique_ptr<Policy>(new SspPolicy(config.num_workers, config.staleness));
  }
  return Status::InvalidArgument("unknown policy '" + config.name + "' (expected one of " +
                                 std::string(PolicyNames()) + ")");
}

std::string_view PolicyNames() { return "bsp, asp, ssp"; }

}  // namespace dmlps::sync
