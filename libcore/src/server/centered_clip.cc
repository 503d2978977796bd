#include "server/centered_clip.h"

#include <cmath>
#include <limits>

namespace dmlps::server {

std::span<const float> CenteredClip::Round(std::span<const int64_t> workers,
                                           std::span<const std::vector<float>> values) {
  std::vector<std::vector<float>*> round;
  round.reserve(workers.size());
  for (size_t k = 0; k < workers.size(); ++k) round.push_back(&TakePush(workers[k], values[k]));
  if (center_.empty()) center_ = Median(round);
  // A value no push of the worker has given yet stands at the centre: it
  // pulls nowhere.
  for (std::vector<float>* m : round) {
    for (size_t i = 0; i < m->size(); ++i) {
      if (std::isnan((*m)[i])) (*m)[i] = center_[i];
    }
  }
  for (int64_t i = 0; i < iterations_; ++i) Step(round);
  return center_;
}

std::vector<float>& CenteredClip::TakePush(int64_t worker, const std::vector<float>& values) {
  auto [it, fresh] = momenta_.try_emplace(worker);
  std::vector<float>& m = it->second;
  if (fresh) m.assign(values.size(), std::numeric_limits<float>::quiet_NaN());
  for (size_t i = 0; i < values.size(); ++i) {
    const float g = values[i];
    if (std::isnan(g)) continue;
    m[i] = std::isnan(m[i]) ? g : static_cast<float>(momentum_ * m[i] + double{g});
  }
  return m;
}

std::vector<float> CenteredClip::Median(std::span<std::vector<float>* const> momenta) {
  const size_t n = momenta.front()->size();
  std::vector<float> median(n, 0.f);
  Aggregation rule;
  rule.rule = Aggregation::Rule::kMedian;
  std::vector<float> column(momenta.size());
  for (size_t i = 0; i < n; ++i) {
    size_t have = 0;
    for (const std::vector<float>* m : momenta) {
      if (!std::isnan((*m)[i])) column[have++] = (*m)[i];
    }
    if (have > 0) median[i] = AggregateValues(std::span<float>(column.data(), have), rule);
  }
  return median;
}

void CenteredClip::Step(std::span<std::vector<float>* const> momenta) {
  const size_t n = center_.size();
  // Summed in double, in the order of the pushes: the same centre whatever
  // the threads.
  std::vector<double> move(n, 0.0);
  for (const std::vector<float>* m : momenta) {
    double squares = 0;
    for (size_t i = 0; i < n; ++i) {
      const double d = double{(*m)[i]} - center_[i];
      squares += d * d;
    }
    const double norm = std::sqrt(squares);
    const double scale = norm > radius_ ? radius_ / norm : 1.0;
    for (size_t i = 0; i < n; ++i) move[i] += scale * (double{(*m)[i]} - center_[i]);
  }
  const auto k = static_cast<double>(momenta.size());
  for (size_t i = 0; i < n; ++i) center_[i] = static_cast<float>(center_[i] + move[i] / k);
}

}  // namespace dmlps::server
