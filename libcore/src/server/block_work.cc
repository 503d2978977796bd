#include "server/block_work.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>

#include "dmlps/optim/optimizer.h"

namespace dmlps::server {

void BlockWork::RunCombine(const StoreOp& op, int64_t from, int64_t to, bool state) {
  if (op.clipper != nullptr && !state) {
    // The round's centre, computed whole by PushBound.
    for (int64_t i = from; i < to; ++i) {
      accumulator_[static_cast<size_t>(i)] += op.value * op.center[static_cast<size_t>(i)];
    }
    return;
  }
  const auto k = op.pushes.size();
  const auto n = static_cast<size_t>(to - from);
  // Row p holds push p's values; NaN marks one left out (the values taken
  // are all finite).
  std::vector<float> rows(k * n, std::numeric_limits<float>::quiet_NaN());
  for (size_t p = 0; p < k; ++p) {
    const float factor = state ? 1.f : op.factors[p];
    op.pushes[p]->ForEachIn(
        from, to, [&](int64_t offset, const proto::IncomingTensor::ConstMap& g) {
          Eigen::Map<Eigen::VectorXf>(rows.data() + p * n + static_cast<size_t>(offset - from),
                                      g.size()) = factor * g;
        });
  }
  std::vector<float> column(k);
  for (size_t i = 0; i < n; ++i) {
    size_t have = 0;
    for (size_t p = 0; p < k; ++p) {
      const float v = rows[p * n + i];
      if (!std::isnan(v)) column[have++] = v;
    }
    if (have == 0) continue;
    accumulator_[static_cast<size_t>(from) + i] +=
        op.value * AggregateValues(std::span<float>(column.data(), have), op.rule);
  }
}

void BlockWork::Run(const StoreOp& op, float* lane_params, float* lane_out, int64_t lane,
                    int64_t from, int64_t to, bool fill) {
  // Module state, from state_begin_ on, is averaged rather than stepped.
  const int64_t split = std::clamp(state_begin_, from, to);
  if (!op.floats() || split == to) {
    RunParams(op, lane_params, lane_out, lane, from, to, fill);
    return;
  }
  if (split > from) RunParams(op, lane_params, lane_out, lane, from, split, fill);
  RunState(op, lane_params, lane_out, lane, split, to);
}

void BlockWork::RunState(const StoreOp& op, float* lane_params, float* lane_out, int64_t lane,
                         int64_t from, int64_t to) {
  using Vec = Eigen::Map<Eigen::VectorXf>;
  const auto n = static_cast<Eigen::Index>(to - from);
  const int64_t at = from - layout_.begin(lane);
  Vec acc(accumulator_.data() + from, n);
  switch (op.kind) {
    case StoreOp::Kind::kStage:
      op.push->ForEachIn(from, to, [&](int64_t offset, const proto::IncomingTensor::ConstMap& g) {
        Vec(accumulator_.data() + offset, g.size()) += op.state_value * g;
      });
      break;
    case StoreOp::Kind::kCombine:
      RunCombine(op, from, to, /*state=*/true);
      break;
    case StoreOp::Kind::kVerify: {
      const float scale = op.verdict->state_scale;
      bool finite = true;
      if (op.fused) {
        Vec out(lane_out + at, n);
        if (scale > 0) {
          out = scale * acc;
        } else {
          out = Vec(lane_params + at, n);
        }
        finite = (out.array() * 0.f).sum() == 0.f;
      } else if (scale > 0) {
        finite = ((scale * acc).array() * 0.f).sum() == 0.f;
      }
      if (!finite) op.verdict->finite.store(false, std::memory_order_relaxed);
      break;
    }
    case StoreOp::Kind::kApply:
      if (!op.fused && op.verdict->state_scale > 0 &&
          op.verdict->finite.load(std::memory_order_relaxed)) {
        Vec(lane_params + at, n) = op.verdict->state_scale * acc;
      }
      acc.setZero();  // the fused step's state is in the candidate already
      break;
    default:
      break;  // kNorm: the norm is the parameters'
  }
}

void BlockWork::RunParams(const StoreOp& op, float* lane_params, float* lane_out, int64_t lane,
                          int64_t from, int64_t to, bool fill) {
  const auto n = static_cast<size_t>(to - from);
  float* params = lane_params + (from - layout_.begin(lane));
  std::span<float> acc(accumulator_.data() + from, n);
  switch (op.kind) {
    case StoreOp::Kind::kStage: {
      const float weight = op.value;
      op.push->ForEachIn(from, to, [&](int64_t offset, const proto::IncomingTensor::ConstMap& g) {
        Eigen::Map<Eigen::VectorXf>(accumulator_.data() + offset, g.size()) += weight * g;
      });
      break;
    }
    case StoreOp::Kind::kCombine:
      RunCombine(op, from, to);
      break;
    case StoreOp::Kind::kNorm:
      op.verdict->squares[StepVerdict::Slot(lane, from)] =
          Eigen::Map<const Eigen::VectorXf>(acc.data(), static_cast<Eigen::Index>(n))
              .cast<double>()
              .squaredNorm();
      break;
    case StoreOp::Kind::kVerify: {
      const std::span<const float> now(params, n);
      const optim::StepInfo& step = op.verdict->step;
      const bool finite =
          op.fused ? optim::StepAccumulatedOutOfPlace(
                         op.optimizer, step, now, acc,
                         std::span<float>(lane_out + (from - layout_.begin(lane)), n), from)
                   : optim::AccumulatedStaysFinite(op.optimizer, step, now, acc, from);
      if (!finite) op.verdict->finite.store(false, std::memory_order_relaxed);
      break;
    }
    case StoreOp::Kind::kApply:
      if (op.fused) {
        // The step was computed by the check; its parameters are swapped in.
        if (op.verdict->finite.load(std::memory_order_relaxed)) {
          optim::TakeAccumulated(op.optimizer, acc, from);
        } else if (op.optimizer != nullptr && op.optimizer->KeepsState()) {
          std::fill(acc.begin(), acc.end(), 0.f);  // refused: the state computed is dropped
        }
      } else if (op.verdict->finite.load(std::memory_order_relaxed)) {
        optim::ApplyAccumulated(op.optimizer, op.verdict->step, std::span<float>(params, n),
                                std::span<float>(accumulator_.data() + from, n), from);
      } else {
        std::fill_n(accumulator_.data() + from, n, 0.f);  // refused: the sum is dropped
      }
      break;
    case StoreOp::Kind::kSnapshot:
      if (fill) std::memcpy(op.point->values->data() + from, params, n * sizeof(float));
      break;
    case StoreOp::Kind::kSend:
      break;  // sent from the lane itself (LaneQueue::Finish)
  }
}

}  // namespace dmlps::server
