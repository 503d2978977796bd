#include "server/updates.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <functional>
#include <utility>

namespace dmlps::server {

void ModelUpdates::Stage(const sync::HandledPush<Gradient>& push, double weight) {
  if (push.payload == nullptr) return;  // the policy only stages usable pushes
  if (deterministic_) {
    // Summed at the next apply, in rank order.
    held_.push_back({push.worker, push.clock, weight, push.payload});
    return;
  }
  // Summed chunk by chunk as a streamed gradient arrives.
  store_.Stage(push.payload, static_cast<float>(weight));
  shards_.Order({proto::Order::kStage, push.worker, push.clock, weight});
}

void ModelUpdates::Apply(double scale, bool with_optimizer, int64_t version) {
  // --deterministic: the same sum whatever order the pushes came in.
  std::stable_sort(held_.begin(), held_.end(),
                   [](const HeldStage& a, const HeldStage& b) { return a.worker < b.worker; });
  if (aggregation_.robust()) {
    // One shard only (ValidateConfig): no orders to pass on.
    std::vector<std::shared_ptr<proto::IncomingTensor>> pushes;
    std::vector<float> weights;
    std::vector<int64_t> workers;
    for (HeldStage& held : held_) {
      pushes.push_back(std::move(held.gradient));
      weights.push_back(static_cast<float>(held.weight));
      workers.push_back(held.worker);
    }
    if (pushes.empty()) {
      // Nothing to combine.
    } else if (clipper_ != nullptr) {
      store_.Combine(std::move(pushes), std::move(weights), *clipper_, std::move(workers));
    } else {
      store_.Combine(std::move(pushes), std::move(weights), aggregation_);
    }
  } else {
    for (HeldStage& held : held_) {
      store_.Stage(std::move(held.gradient), static_cast<float>(held.weight));
      shards_.Order({proto::Order::kStage, held.worker, held.clock, held.weight});
    }
  }
  held_.clear();
  // The policy counted this apply already: its version is the new one. The
  // span ends when the last chunk is applied (streamed: once it arrived).
  const int64_t start_us = trace::NowMicros();
  auto done = [this, start_us, version](bool applied) {
    if (!applied) {
      // The model stays as it was; the version still moves on, as the
      // policy counted it, and training goes on with the next round.
      ++refused_;
      spdlog::warn("update {} refused: it would make the model non-finite ({} refused so far)",
                   version, refused_);
    }
    if (tracer_ == nullptr) return;
    if (!applied) {
      tracer_->Instant("apply", "update refused", trace::NowMicros(),
                       {{"version", version}, {"refused", refused_}});
    }
    tracer_->Span("apply", "apply", start_us, trace::NowMicros() - start_us,
                  {{"version", version}, {"applied", applied ? 1 : 0}});
  };
  store_.Apply(with_optimizer ? &optimizer_ : nullptr, static_cast<float>(scale), std::move(done));
  shards_.Order({with_optimizer ? proto::Order::kApply : proto::Order::kApplyDelta, -1, 0, scale});
}

}  // namespace dmlps::server
