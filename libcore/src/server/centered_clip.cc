#include "server/centered_clip.h"

#include <algorithm>
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
  if (!adaptive_) {
    for (int64_t i = 0; i < iterations_; ++i) Step(round, radius_);
    return center_;
  }
  // At most f = ceil(k / 2) - 1 of the k are bad: a bad momentum farther
  // from each honest one than the honest ones stand from each other is
  // then in no honest momentum's k - f nearest, and the radius, the
  // distance of the (k - f)-th nearest, is an honest one's.
  const size_t keep = round.size() - (round.size() - 1) / 2;
  std::vector<std::vector<float>> mixed = Mix(round, keep);
  std::vector<std::vector<float>*> inputs;
  inputs.reserve(mixed.size());
  for (std::vector<float>& m : mixed) inputs.push_back(&m);
  for (int64_t i = 0; i < iterations_; ++i) Step(inputs, KeptRadius(inputs, keep));
  return center_;
}

namespace {

// The squared L2 distance of two momenta as long, in double.
double SquaredDistance(const std::vector<float>& a, std::span<const float> b) {
  double squares = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = double{a[i]} - b[i];
    squares += d * d;
  }
  return squares;
}

}  // namespace

std::vector<std::vector<float>> CenteredClip::Mix(std::span<std::vector<float>* const> momenta,
                                                  size_t keep) {
  const size_t k = momenta.size();
  std::vector<double> squares(k * k, 0.0);
  for (size_t a = 0; a < k; ++a) {
    for (size_t b = a + 1; b < k; ++b) {
      squares[a * k + b] = squares[b * k + a] = SquaredDistance(*momenta[a], *momenta[b]);
    }
  }
  const size_t n = momenta.front()->size();
  std::vector<std::vector<float>> mixed(k);
  std::vector<size_t> order(k);
  std::vector<double> sum(n);
  for (size_t a = 0; a < k; ++a) {
    for (size_t b = 0; b < k; ++b) order[b] = b;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t x, size_t y) { return squares[a * k + x] < squares[a * k + y]; });
    std::fill(sum.begin(), sum.end(), 0.0);
    for (size_t j = 0; j < keep; ++j) {
      const std::vector<float>& m = *momenta[order[j]];
      for (size_t i = 0; i < n; ++i) sum[i] += m[i];
    }
    mixed[a].resize(n);
    for (size_t i = 0; i < n; ++i)
      mixed[a][i] = static_cast<float>(sum[i] / static_cast<double>(keep));
  }
  return mixed;
}

double CenteredClip::KeptRadius(std::span<std::vector<float>* const> momenta, size_t keep) const {
  std::vector<double> distances;
  distances.reserve(momenta.size());
  for (const std::vector<float>* m : momenta) {
    distances.push_back(std::sqrt(SquaredDistance(*m, center_)));
  }
  std::nth_element(distances.begin(), distances.begin() + static_cast<std::ptrdiff_t>(keep - 1),
                   distances.end());
  return distances[keep - 1];
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

void CenteredClip::Step(std::span<std::vector<float>* const> momenta, double radius) {
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
    const double scale = norm > radius ? radius / norm : 1.0;
    for (size_t i = 0; i < n; ++i) move[i] += scale * (double{(*m)[i]} - center_[i]);
  }
  const auto k = static_cast<double>(momenta.size());
  for (size_t i = 0; i < n; ++i) center_[i] = static_cast<float>(center_[i] + move[i] / k);
}

}  // namespace dmlps::server
