#include "dmlps/sync/driver.h"

#include <algorithm>
#include <utility>
#include <variant>

namespace dmlps::sync {

DriverCore::DriverCore(std::unique_ptr<Policy> policy, const DriverOptions& options)
    : policy_(std::move(policy)),
      options_(options),
      slots_(static_cast<size_t>(policy_->num_workers())) {}

void DriverCore::Attach(WorkerId w, const WorkerInfo& info) {
  slots_[w] = Slot{};
  slots_[w].present = true;
  slots_[w].info = info;
}

WorkerId DriverCore::AddRank() {
  const WorkerId w = policy_->AddWorker();
  slots_.resize(static_cast<size_t>(policy_->num_workers()));
  return w;
}

void DriverCore::Start() {
  started_ = true;
  Actions actions;
  for (WorkerId w = 0; w < static_cast<WorkerId>(slots_.size()); ++w) {
    Slot& slot = slots_[w];
    if (!slot.present) continue;
    policy_->WorkerJoined(w, slot.info, &actions);
    slot.active = true;
    slot.clock_offset = policy_->clock(w);
  }
  for (WorkerId w = 0; w < static_cast<WorkerId>(slots_.size()); ++w) {
    if (slots_[w].present && slots_[w].pull_pending) policy_->PullRequested(w, &actions);
  }
  Carry(actions, nullptr);
  next_eval_ = iteration_ + options_.eval_every;
  events_->Evaluate(true);  // the untrained (or resumed) model: accuracy at time zero
}

void DriverCore::Join(WorkerId w, int64_t worker_clock) {
  Actions actions;
  Slot& slot = slots_[w];
  policy_->WorkerJoined(w, slot.info, &actions);
  slot.active = true;
  slot.clock_offset = policy_->clock(w) - worker_clock;
  Carry(actions, nullptr);
  UpdateHold();
}

void DriverCore::Pull(WorkerId w) {
  slots_[w].pull_pending = true;
  if (!started_) return;
  Actions actions;
  policy_->PullRequested(w, &actions);
  Carry(actions, nullptr);
}

void DriverCore::Lose(WorkerId w) {
  const bool was_active = slots_[w].active;
  slots_[w] = Slot{};
  std::erase_if(held_, [w](const HeldReply& held) { return held.worker == w; });
  if (!started_ || !was_active) return;
  Actions actions;
  policy_->WorkerLeft(w, &actions);
  Carry(actions, nullptr);
  UpdateHold();
  Advance();  // a round the worker held up may have closed
}

void DriverCore::Restore(const PolicyState& state, int64_t samples) {
  policy_->Restore(state);
  iteration_ = state.iteration;
  samples_applied_ = samples;
}

PushOutcome DriverCore::HandlePush(WorkerId w, const PushInfo& push, const StageFn& stage) {
  PushInfo info = push;
  info.clock += slots_[w].clock_offset;
  Actions actions;
  policy_->PushArrived(w, info, &actions);
  PushOutcome outcome;
  for (const Action& a : actions) {
    outcome.dropped = outcome.dropped || std::holds_alternative<Drop>(a);
    outcome.staged = outcome.staged || std::holds_alternative<Stage>(a);
  }
  if (outcome.dropped) {
    ++dropped_pushes_;
    wasted_samples_ += push.samples;
  } else {
    outcome.samples = push.usable ? push.samples : 0;
    samples_applied_ += outcome.samples;
  }
  Carry(actions, &stage);
  return outcome;
}

void DriverCore::Advance() {
  const int64_t before = iteration_;
  iteration_ = policy_->iteration();
  if (iteration_ != before) events_->IterationAdvanced();
  if (options_.max_iterations > 0 && iteration_ >= options_.max_iterations) {
    if (!limit_reached_) {
      limit_reached_ = true;
      events_->LimitReached();
      events_->Evaluate(true);
    }
    return;
  }
  if (options_.eval_every > 0 && iteration_ >= next_eval_) {
    next_eval_ = iteration_ + options_.eval_every;
    events_->Evaluate(false);
  }
}

void DriverCore::Evaluated(double accuracy) {
  if (!started_) return;
  Actions actions;
  policy_->EvaluationSeen(accuracy, &actions);
  Carry(actions, nullptr);
}

bool DriverCore::EndRun() {
  if (limit_reached_) return false;
  limit_reached_ = true;
  events_->Evaluate(true);
  return true;
}

void DriverCore::UpdateHold() {
  if (!started_) return;
  const int64_t live = policy_->live_workers();
  const bool hold = live < options_.min_workers;
  if (hold == holding_) return;
  holding_ = hold;
  events_->HoldChanged(hold, live);
  if (hold) return;
  std::vector<HeldReply> held;
  held.swap(held_);
  for (const HeldReply& reply : held) {
    if (reply.model) {
      Do(ReplyModel{reply.worker}, nullptr);
    } else {
      Do(Continue{reply.worker, reply.download}, nullptr);
    }
  }
}

// The one place actions are told apart: each goes to its Do.
void DriverCore::Carry(const Actions& actions, const StageFn* stage) {
  for (const Action& action : actions) {
    std::visit([&](const auto& a) { Do(a, stage); }, action);
  }
}

bool DriverCore::Present(WorkerId w) const {
  // An answer for a worker no longer here (lost while it was held) has no
  // one to go to.
  return w >= 0 && w < static_cast<WorkerId>(slots_.size()) && slots_[w].present;
}

Reply DriverCore::TakeReply(WorkerId w) {
  Slot& slot = slots_[w];
  const Reply reply{policy_->version(), slot.next_batch, slot.next_token, slot.next_local_steps};
  slot.next_batch = 0;
  slot.next_token = -1;
  slot.next_local_steps = 0;
  return reply;
}

void DriverCore::Do(const Stage& a, const StageFn* stage) {
  // Policies stage the push being handled only, and only a usable one.
  if (stage != nullptr) (*stage)(a.weight);
}

void DriverCore::Do(const Apply& a, const StageFn* /*stage*/) { ApplyStaged(a.scale, true); }

void DriverCore::Do(const ApplyDelta& a, const StageFn* /*stage*/) { ApplyStaged(a.scale, false); }

void DriverCore::Do(const ReplyModel& a, const StageFn* /*stage*/) {
  if (!Present(a.worker)) return;
  if (holding_) {
    held_.push_back({a.worker, true, false});
    return;
  }
  slots_[a.worker].pull_pending = false;
  replies_->SendModel(a.worker, TakeReply(a.worker));
}

void DriverCore::Do(const Hold& /*a*/, const StageFn* /*stage*/) {}

void DriverCore::Do(const Drop& a, const StageFn* /*stage*/) {
  if (Present(a.worker)) replies_->Dropped(a.worker, a);
}

void DriverCore::Do(const Continue& a, const StageFn* /*stage*/) {
  if (!Present(a.worker)) return;
  if (holding_) {
    held_.push_back({a.worker, false, a.download});
    return;
  }
  replies_->SendContinue(a.worker, a.download, TakeReply(a.worker));
}

void DriverCore::Do(const SyncNow& a, const StageFn* /*stage*/) {
  if (Present(a.worker)) replies_->SendSyncNow(a.worker, a.round - slots_[a.worker].clock_offset);
}

void DriverCore::Do(const SetBatch& a, const StageFn* /*stage*/) {
  if (Present(a.worker)) slots_[a.worker].next_batch = a.samples;
}

void DriverCore::Do(const Grant& a, const StageFn* /*stage*/) {
  if (Present(a.worker)) slots_[a.worker].next_token = a.token;
}

void DriverCore::Do(const SetLocalSteps& a, const StageFn* /*stage*/) {
  if (Present(a.worker)) slots_[a.worker].next_local_steps = a.steps;
}

void DriverCore::Do(const Switch& a, const StageFn* /*stage*/) { events_->Switched(a); }

void DriverCore::Do(const Decision& a, const StageFn* /*stage*/) { events_->Decided(a); }

}  // namespace dmlps::sync
