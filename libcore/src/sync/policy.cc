#include "dmlps/sync/policy.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <utility>

namespace dmlps::sync {

namespace {

// Every mode once, with its name as the Welcome spells it: the one list
// both directions read. The modes are numbered from 0, the last being
// kLocalSgd, so the static_assert catches a mode added to the enum only.
constexpr std::pair<WorkerMode, std::string_view> kWorkerModes[] = {
    {WorkerMode::kSync, "sync"},   {WorkerMode::kChunked, "chunked"},
    {WorkerMode::kLocal, "local"}, {WorkerMode::kLocalOverlap, "local-overlap"},
    {WorkerMode::kToken, "token"}, {WorkerMode::kLocalSgd, "local-sgd"},
};
static_assert(std::size(kWorkerModes) == static_cast<size_t>(WorkerMode::kLocalSgd) + 1);

}  // namespace

std::string_view WorkerModeName(WorkerMode mode) {
  for (const auto& [each, name] : kWorkerModes) {
    if (each == mode) return name;
  }
  return "sync";
}

Result<WorkerMode> ParseWorkerMode(std::string_view name) {
  for (const auto& [mode, mode_name] : kWorkerModes) {
    if (mode_name == name) return mode;
  }
  return Status::InvalidArgument("unknown worker mode '" + std::string(name) + "'");
}

void Policy::WorkerJoined(WorkerId w, const WorkerInfo& info, Actions* out) {
  const int64_t start = StartClock();
  if (!workers_[w].joined) ++joined_count_;
  workers_[w].joined = true;
  workers_[w].pull_held = false;
  workers_[w].clock = start;
  RecountMinClock();
  OnJoin(w, info, out);
}

int64_t Policy::StartClock() const { return joined_count_ > 0 ? min_clock_ : floor_clock_; }

void Policy::WorkerLeft(WorkerId w, Actions* out) {
  if (w < 0 || w >= num_workers() || !workers_[w].joined) return;
  workers_[w].joined = false;
  workers_[w].pull_held = false;
  --joined_count_;
  // Whoever joins next when no one is left starts where the slowest stood.
  if (joined_count_ == 0) floor_clock_ = min_clock_;
  RecountMinClock();
  // An asynchronous iteration needs fewer pushes now: it may be complete.
  if (joined_count_ > 0 && pushes_in_iteration_ >= joined_count_) {
    ++async_iteration_;
    pushes_in_iteration_ = 0;
  }
  OnLeave(w, out);
}

WorkerId Policy::AddWorker() {
  workers_.emplace_back();
  OnAddWorker();
  return num_workers() - 1;
}

PolicyState Policy::Save() const {
  PolicyState state;
  state.version = version_;
  state.iteration = iteration();
  state.extra = SaveExtra();
  return state;
}

void Policy::Restore(const PolicyState& state) {
  version_ = state.version;
  async_iteration_ = state.iteration;
  pushes_in_iteration_ = 0;
  floor_clock_ = state.iteration;
  OnRestore(state);
}

void Policy::RecountMinClock() {
  int64_t min_clock = std::numeric_limits<int64_t>::max();
  int64_t at_min = 0;
  for (const WorkerState& s : workers_) {
    if (!s.joined) continue;
    if (s.clock < min_clock) {
      min_clock = s.clock;
      at_min = 0;
    }
    if (s.clock == min_clock) ++at_min;
  }
  min_clock_ = at_min == 0 ? 0 : min_clock;
  at_min_clock_ = at_min;
}

int64_t Policy::iteration() const { return async_iteration_; }

void Policy::PushArrived(WorkerId w, const PushInfo& push, Actions* out) {
  WorkerState& state = workers_[w];
  if (!state.joined) {
    out->push_back(Drop{.worker = w, .reason = "push from a worker that has not joined"});
    return;
  }
  if (push.clock != state.clock) {
    out->push_back(Drop{.worker = w,
                        .reason = "push for clock " + std::to_string(push.clock) +
                                  ", expected clock " + std::to_string(state.clock)});
    return;
  }
  if (std::string why = Refuse(w, push); !why.empty()) {
    out->push_back(Drop{.worker = w, .reason = std::move(why)});
    return;
  }
  const bool was_at_min = state.clock == min_clock_;
  ++state.clock;
  ++total_pushes_;
  if (++pushes_in_iteration_ >= joined_count_) {
    ++async_iteration_;
    pushes_in_iteration_ = 0;
  }
  // Clocks only rise, one at a time: the minimum moves when the last worker
  // on it moves off.
  if (was_at_min && --at_min_clock_ == 0) RecountMinClock();
  OnPush(w, push, out);
}

void Policy::OnPull(WorkerId w, Actions* out) {
  if (MayStart(w)) {
    workers_[w].pull_held = false;
    BeforeReply(w, out);
    out->push_back(ReplyModel{w});
  } else {
    workers_[w].pull_held = true;
    out->push_back(Hold{w});
  }
}

void Policy::EmitApply(double scale, Actions* out) {
  out->push_back(Apply{scale});
  ++version_;
}

void Policy::EmitApplyDelta(double scale, Actions* out) {
  out->push_back(ApplyDelta{scale});
  ++version_;
}

void Policy::ReleaseHeld(Actions* out) {
  for (WorkerId w = 0; w < num_workers(); ++w) {
    if (workers_[w].pull_held && MayStart(w)) {
      workers_[w].pull_held = false;
      BeforeReply(w, out);
      out->push_back(ReplyModel{w});
    }
  }
}

std::string BspPolicy::Refuse(WorkerId w, const PushInfo& push) const {
  // The BSP invariant: a gradient applied at version v was computed on v.
  if (push.base_version != version()) {
    return "gradient computed on version " + std::to_string(push.base_version) +
           ", the model is at version " + std::to_string(version());
  }
  // Every worker pushes once per round, so a worker whose clock is past the
  // round has pushed in it already; a second push would be counted twice.
  if (clock(w) > round_) {
    return "second push in round " + std::to_string(round_) +
           " without fetching the model in between";
  }
  return {};
}

void BspPolicy::OnPush(WorkerId w, const PushInfo& push, Actions* out) {
  if (push.usable && push.samples > 0) {
    out->push_back(Stage{w, static_cast<double>(push.samples)});
    staged_samples_ += push.samples;
  }
  // The round's first push: none before it, not even from a worker gone since.
  const bool first = arrived_ == 0 && !pushed_by_gone_;
  ++arrived_;
  OnArrival(w, push, first, out);
  MaybeCloseRound(out);
}

void BspPolicy::MaybeCloseRound(Actions* out) {
  if (arrived_ == 0 || arrived_ < joined_count()) return;
  // Σ_i (b_i / B) g_i: each mean gradient weighted by its samples, over their
  // total (A-BSP: Σ_i S_i / Σ_i n_i, the same number).
  if (staged_samples_ > 0) EmitApply(1.0 / static_cast<double>(staged_samples_), out);
  ++round_;
  arrived_ = 0;
  staged_samples_ = 0;
  pushed_by_gone_ = false;
  OnRoundClosed(out);
  ReleaseHeld(out);
}

void BspPolicy::OnLeave(WorkerId w, Actions* out) {
  // Its clock is past the round once it pushed in it.
  if (clock(w) > round_) {
    --arrived_;
    pushed_by_gone_ = true;
  }
  MaybeCloseRound(out);
}

bool BspPolicy::MayStart(WorkerId w) const { return clock(w) <= round_; }

std::string SspPolicy::Name() const {
  return staleness_ < 0 ? "asp" : "ssp:" + std::to_string(staleness_);
}

void SspPolicy::OnPush(WorkerId w, const PushInfo& push, Actions* out) {
  if (push.usable && push.samples > 0) {
    out->push_back(Stage{w, 1.0});
    EmitApply(1.0 / static_cast<double>(joined_count()), out);
  }
  if (staleness_ >= 0 && MinClock() != released_at_min_clock_) {
    released_at_min_clock_ = MinClock();
    ReleaseHeld(out);
  }
}

void SspPolicy::OnLeave(WorkerId /*w*/, Actions* out) {
  if (staleness_ >= 0 && MinClock() != released_at_min_clock_) {
    released_at_min_clock_ = MinClock();
    ReleaseHeld(out);
  }
}

bool SspPolicy::MayStart(WorkerId w) const {
  return staleness_ < 0 || clock(w) - MinClock() <= staleness_;
}

ServerOptimizer ServerOptimizerFor(const PolicyConfig& config, double lr, double momentum) {
  if (!UsesOuterOptimizer(config)) {
    // Pushes applied on arrival each step the momentum unless told to take
    // it once every momentum_every of them (docs/algorithms.md, "ASP").
    const bool delayed = TakesMomentumEvery(config) && config.momentum_every > 1;
    return {lr, momentum, false, delayed ? config.momentum_every : 1};
  }
  // Asynchronous pushes take the momentum once per momentum_every of them.
  int64_t every = 1;
  if (TakesMomentumEvery(config)) {
    every = config.momentum_every > 0 ? config.momentum_every : config.job.workers;
  }
  return {config.outer_lr, config.outer_momentum, config.outer_nesterov, every};
}

}  // namespace dmlps::sync
