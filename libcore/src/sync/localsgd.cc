#include "dmlps/sync/localsgd.h"

#include <algorithm>
#include <cmath>

namespace dmlps::sync {

AsyncLocalSgdPolicy::AsyncLocalSgdPolicy(int64_t num_workers, int64_t local_steps, bool dylu)
    : Policy(num_workers), local_steps_(local_steps), dylu_(dylu), speed_(num_workers, 0) {}

void AsyncLocalSgdPolicy::OnPush(WorkerId w, const PushInfo& push, Actions* out) {
  if (dylu_ && push.busy_s > 0 && push.samples > 0) {
    // The last speed seen, as DyLU measures it: work over busy time.
    speed_[w] = static_cast<double>(push.samples) / push.busy_s;
  }
  if (push.usable && push.samples > 0) {
    out->push_back(Stage{w, 1.0});
    EmitApply(1.0 / static_cast<double>(joined_count()), out);
  }
}

int64_t AsyncLocalSgdPolicy::local_steps(WorkerId w) const {
  if (!dylu_ || speed_[w] <= 0) return local_steps_;
  double fastest = 0;
  for (WorkerId v = 0; v < num_workers(); ++v) {
    if (joined(v)) fastest = std::max(fastest, speed_[v]);
  }
  const double steps = std::floor(static_cast<double>(local_steps_) * speed_[w] / fastest + 0.5);
  return std::clamp<int64_t>(static_cast<int64_t>(steps), 1, local_steps_);
}

void AsyncLocalSgdPolicy::BeforeReply(WorkerId w, Actions* out) {
  if (dylu_) out->push_back(SetLocalSteps{w, local_steps(w)});
}

void AsyncLocalSgdPolicy::OnJoin(WorkerId w, const WorkerInfo& /*info*/, Actions* /*out*/) {
  speed_[w] = 0;
}

void AsyncLocalSgdPolicy::OnLeave(WorkerId w, Actions* /*out*/) { speed_[w] = 0; }

}  // namespace dmlps::sync
