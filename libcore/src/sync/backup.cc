#include "dmlps/sync/backup.h"

#include <algorithm>

namespace dmlps::sync {

BackupPolicy::BackupPolicy(int64_t num_workers, int64_t backup)
    : Policy(num_workers), backup_(backup), last_pushed_round_(num_workers, -1) {}

std::string BackupPolicy::Name() const { return "backup:" + std::to_string(backup_); }

void BackupPolicy::OnPush(WorkerId w, const PushInfo& push, Actions* out) {
  // The base class has counted the push already: the worker sent it and goes
  // on from the next clock whether or not it is used. A gradient computed on
  // a version older than the model's belongs to a round that closed without
  // it. A round that applied nothing leaves the version, and therefore the
  // model, as it was, so a gradient computed before it is still on time.
  if (push.base_version < version()) {
    out->push_back(Drop{.worker = w,
                        .reason = "arrived late: computed on version " +
                                  std::to_string(push.base_version) + ", the model is at version " +
                                  std::to_string(version()) + " (round " + std::to_string(round_) +
                                  "); its samples are wasted",
                        .late = true});
    return;
  }
  // A second push within one round means the worker did not fetch the model
  // in between (MayStart holds such a pull); it cannot count twice.
  if (last_pushed_round_[w] >= round_) {
    out->push_back(Drop{.worker = w,
                        .reason = "second push in round " + std::to_string(round_) +
                                  " without fetching the model in between"});
    return;
  }
  last_pushed_round_[w] = round_;
  if (push.usable && push.samples > 0) {
    out->push_back(Stage{w, static_cast<double>(push.samples)});
    staged_samples_ += push.samples;
  }
  ++arrived_;
  MaybeCloseRound(out);
}

void BackupPolicy::MaybeCloseRound(Actions* out) {
  // The first N - b on-time pushes close the round; with fewer workers joined
  // than b + 1, every push does.
  const int64_t needed = std::max<int64_t>(1, joined_count() - backup_);
  if (arrived_ == 0 || arrived_ < needed) return;
  if (staged_samples_ > 0) EmitApply(1.0 / static_cast<double>(staged_samples_), out);
  ++round_;
  arrived_ = 0;
  staged_samples_ = 0;
  ReleaseHeld(out);
}

void BackupPolicy::OnJoin(WorkerId w, const WorkerInfo& /*info*/, Actions* /*out*/) {
  last_pushed_round_[w] = -1;
}

void BackupPolicy::OnLeave(WorkerId /*w*/, Actions* out) {
  if (joined_count() > 0) MaybeCloseRound(out);
}

bool BackupPolicy::MayStart(WorkerId w) const { return last_pushed_round_[w] < round_; }

}  // namespace dmlps::sync
