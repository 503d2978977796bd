#include "dmlps/sync/wbsp.h"

#include <algorithm>

namespace dmlps::sync {

WbspPolicy::WbspPolicy(int64_t num_workers, bool overlap)
    : Policy(num_workers),
      overlap_(overlap),
      pushed_this_round_(num_workers, false),
      must_download_(num_workers, false) {}

void WbspPolicy::OnPush(WorkerId w, const PushInfo& push, Actions* out) {
  // Each delta counts on its own with weight 1: a worker that managed k steps
  // in the round contributes k deltas, not their mean.
  if (push.usable && push.samples > 0) {
    out->push_back(Stage{w, 1.0});
    ++staged_;
  }
  // Only joined workers get here, so counting them is enough.
  if (!pushed_this_round_[w]) {
    pushed_this_round_[w] = true;
    ++pushed_count_;
  }
  MaybeCloseRound(out);
  out->push_back(Continue{w, must_download_[w]});
}

void WbspPolicy::MaybeCloseRound(Actions* out) {
  if (pushed_count_ == 0 || pushed_count_ < joined_count()) return;
  // A round whose deltas were all unusable leaves the model and its version
  // as they are, but still ends: the workers download the unchanged model,
  // which drops local steps that only produced unusable deltas.
  if (staged_ > 0) EmitApplyDelta(1.0 / static_cast<double>(joined_count()), out);
  ++round_;
  staged_ = 0;
  std::fill(pushed_this_round_.begin(), pushed_this_round_.end(), false);
  pushed_count_ = 0;
  for (WorkerId v = 0; v < num_workers(); ++v) must_download_[v] = joined(v);
}

void WbspPolicy::OnJoin(WorkerId w, const WorkerInfo& /*info*/, Actions* /*out*/) {
  // Its first pull is its download.
  pushed_this_round_[w] = false;
  must_download_[w] = false;
}

void WbspPolicy::OnLeave(WorkerId w, Actions* out) {
  if (pushed_this_round_[w]) {
    pushed_this_round_[w] = false;
    --pushed_count_;
  }
  must_download_[w] = false;
  MaybeCloseRound(out);
}

void WbspPolicy::OnAddWorker() {
  pushed_this_round_.push_back(false);
  must_download_.push_back(false);
}

void WbspPolicy::BeforeReply(WorkerId w, Actions* /*out*/) {
  // The reply is the download the flag asked for.
  must_download_[w] = false;
}

}  // namespace dmlps::sync
