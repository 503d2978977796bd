#include "server/push_bound.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <vector>

namespace dmlps::server {

void PushBound::Take(StoreOp& op) const {
  op.bounded = true;
  if (max_norm_ <= 0) {
    if (op.clipper != nullptr) ClipRound(op);
    return;
  }
  auto factor = [this](const proto::IncomingTensor& push) {
    double squares = 0;
    const int64_t params = std::min(push.size(), state_begin_);
    push.ForEachIn(0, params, [&](int64_t, const proto::IncomingTensor::ConstMap& g) {
      squares += g.cast<double>().squaredNorm();
    });
    const double norm = std::sqrt(squares);
    return norm > max_norm_ ? static_cast<float>(max_norm_ / norm) : 1.f;
  };
  if (op.kind == StoreOp::Kind::kStage) op.value *= factor(*op.push);
  if (op.kind == StoreOp::Kind::kCombine) {
    for (size_t k = 0; k < op.pushes.size(); ++k) op.factors[k] = factor(*op.pushes[k]);
  }
  if (op.clipper != nullptr) ClipRound(op);
}

void PushBound::ClipRound(StoreOp& op) const {
  // The parameters only: module state takes the median (BlockWork).
  const auto params = static_cast<size_t>(std::min(size_, state_begin_));
  // One gradient a worker: the weighted mean of its pushes of the round
  // (A-BSP's chunks, token scheduling's tokens), value by value.
  std::vector<int64_t> workers;
  std::vector<std::vector<double>> sums;
  std::vector<std::vector<double>> weights;
  for (size_t k = 0; k < op.pushes.size(); ++k) {
    const auto at = static_cast<size_t>(std::find(workers.begin(), workers.end(), op.workers[k]) -
                                        workers.begin());
    if (at == workers.size()) {
      workers.push_back(op.workers[k]);
      sums.emplace_back(params, 0.0);
      weights.emplace_back(params, 0.0);
    }
    const double weight = op.weights[k];
    const double factor = op.factors[k];
    op.pushes[k]->ForEachIn(0, static_cast<int64_t>(params),
                            [&](int64_t offset, const proto::IncomingTensor::ConstMap& g) {
                              for (Eigen::Index i = 0; i < g.size(); ++i) {
                                const auto to = static_cast<size_t>(offset + i);
                                sums[at][to] += weight * factor * double{g[i]};
                                weights[at][to] += weight;
                              }
                            });
  }
  std::vector<std::vector<float>> values(workers.size());
  for (size_t w = 0; w < workers.size(); ++w) {
    values[w].assign(params, std::numeric_limits<float>::quiet_NaN());  // left out
    for (size_t i = 0; i < params; ++i) {
      if (weights[w][i] > 0) values[w][i] = static_cast<float>(sums[w][i] / weights[w][i]);
    }
  }
  const std::span<const float> center = op.clipper->Round(workers, values);
  op.center.assign(center.begin(), center.end());
}

}  // namespace dmlps::server
