#include "sim/local_steps.h"

#include <Eigen/Core>
#include <algorithm>
#include <utility>

namespace dmlps::sim {
namespace {

using Vec = Eigen::Map<Eigen::VectorXf>;
using ConstVec = Eigen::Map<const Eigen::VectorXf>;

}  // namespace

void OverlapHandover::AddStep(std::span<const float> velocity, float lr, const StepTimes& step) {
  const auto n = static_cast<Eigen::Index>(pending_.size());
  Vec(pending_.data(), n) -= lr * ConstVec(velocity.data(), n);
  ++steps_;
  samples_ += step.samples;
  busy_s_ += step.compute + step.straggle;
}

sync::PushInfo OverlapHandover::TakePending(int64_t clock, int64_t version, int64_t batch) {
  in_flight_.swap(pending_);
  std::fill(pending_.begin(), pending_.end(), 0.f);
  const sync::PushInfo push{
      .clock = clock,
      .base_version = version,
      .samples = samples_,
      .batch = batch,
      .busy_s = busy_s_,
  };
  steps_ = 0;
  samples_ = 0;
  busy_s_ = 0;
  return push;
}

void OverlapHandover::AdoptDownload(std::span<float> params) {
  if (downloaded_ == nullptr) return;
  // θ_local = θ_downloaded + the deltas computed since the last hand-over.
  const auto n = static_cast<Eigen::Index>(params.size());
  Vec(params.data(), n) = ConstVec(downloaded_->data(), n) + ConstVec(pending_.data(), n);
  downloaded_.reset();
}

void LocalSgdRound::AddPseudoGradient(std::span<const float> params, float weight,
                                      std::span<float> acc) const {
  const auto n = static_cast<Eigen::Index>(params.size());
  Vec(acc.data(), n) += weight * (ConstVec(start_.data(), n) - ConstVec(params.data(), n));
}

}  // namespace dmlps::sim
