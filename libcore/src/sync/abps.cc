#include "dmlps/sync/abps.h"

namespace dmlps::sync {

std::string AbpsPolicy::Refuse(WorkerId w, const PushInfo& push) const {
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

void AbpsPolicy::OnPush(WorkerId w, const PushInfo& push, Actions* out) {
  // S_i is sent as a mean over n_i samples, so weight n_i gives back the sum.
  if (push.usable && push.samples > 0) {
    out->push_back(Action::Stage(w, static_cast<double>(push.samples)));
    staged_samples_ += push.samples;
  }
  if (++arrived_ == 1) {
    // The round's first push: everyone still computing stops after its
    // current chunk. Only the first push sends these, so each worker hears it
    // at most once per round. A worker has pushed in the round iff its clock
    // is past it.
    for (WorkerId u = 0; u < num_workers(); ++u) {
      if (u != w && joined(u) && clock(u) <= round_) out->push_back(Action::SyncNow(u, round_));
    }
  }
  if (arrived_ < joined_count()) return;
  // sum_i S_i / sum_i n_i: the mean over every sample processed in the round.
  if (staged_samples_ > 0) EmitApply(1.0 / static_cast<double>(staged_samples_), out);
  ++round_;
  arrived_ = 0;
  staged_samples_ = 0;
  ReleaseHeld(out);
}

bool AbpsPolicy::MayStart(WorkerId w) const { return clock(w) <= round_; }

}  // namespace dmlps::sync
