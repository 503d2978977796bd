#include "dmlps/predict/batches.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace dmlps::predict {

int64_t BatchTarget(int64_t global_batch, const std::vector<int64_t>& caps) {
  int64_t cap_sum = 0;
  for (int64_t cap : caps) {
    if (cap <= 0) return global_batch;
    cap_sum += cap;
  }
  return std::min(global_batch, cap_sum);
}

std::vector<int64_t> Distribute(int64_t total, const std::vector<double>& weight,
                                const std::vector<int64_t>& lo, const std::vector<int64_t>& hi) {
  const size_t n = weight.size();
  int64_t lo_sum = 0;
  int64_t hi_sum = 0;
  for (size_t i = 0; i < n; ++i) {
    lo_sum += lo[i];
    hi_sum = (hi[i] == kNoBatchCap || hi_sum == kNoBatchCap) ? kNoBatchCap : hi_sum + hi[i];
  }
  total = std::clamp(total, lo_sum, hi_sum);

  std::vector<double> share(n);
  auto fill = [&](double lambda) {
    double sum = 0;
    for (size_t i = 0; i < n; ++i) {
      const double wanted = weight[i] > 0 ? lambda * weight[i] : 0;
      share[i] = std::clamp(wanted, static_cast<double>(lo[i]), static_cast<double>(hi[i]));
      sum += share[i];
    }
    return sum;
  };
  // The filled sum grows with lambda: find a lambda that reaches the total,
  // then bisect down to it.
  const double target = static_cast<double>(total);
  double low = 0;
  double high = 1;
  while (fill(high) < target && high < 1e300) high *= 2;
  for (int k = 0; k < 200; ++k) {
    const double mid = (low + high) / 2;
    if (mid <= low || mid >= high) break;  // as close as doubles get
    if (fill(mid) < target) {
      low = mid;
    } else {
      high = mid;
    }
  }
  fill(high);

  std::vector<int64_t> result(n);
  std::vector<std::pair<double, size_t>> by_remainder(n);  // (fraction, index)
  int64_t sum = 0;
  for (size_t i = 0; i < n; ++i) {
    // Kept below 2^63, where an uncapped share would not convert.
    const double whole = std::min(std::floor(share[i]), 9.0e18);
    result[i] = std::clamp(static_cast<int64_t>(whole), lo[i], hi[i]);
    by_remainder[i] = {share[i] - whole, i};
    sum += result[i];
  }
  // Largest fractions first; among equal ones, the lower rank.
  std::stable_sort(by_remainder.begin(), by_remainder.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  // Rounding leaves fewer than n samples to hand out; the loops also absorb
  // whatever the bisection's last bit of error adds or takes away.
  while (sum < total) {
    const int64_t before = sum;
    for (size_t k = 0; k < n && sum < total; ++k) {
      const size_t i = by_remainder[k].second;
      if (result[i] < hi[i]) {
        ++result[i];
        ++sum;
      }
    }
    if (sum == before) break;
  }
  while (sum > total) {
    const int64_t before = sum;
    for (size_t k = n; k-- > 0 && sum > total;) {
      const size_t i = by_remainder[k].second;
      if (result[i] > lo[i]) {
        --result[i];
        --sum;
      }
    }
    if (sum == before) break;
  }
  return result;
}

std::vector<int64_t> AnalyticBatches(int64_t global_batch, const std::vector<double>& speed,
                                     const std::vector<int64_t>& current,
                                     const std::vector<int64_t>& caps) {
  // Linear time in the batch: equal times need b_i proportional to speed. A
  // worker with no prediction yet is pinned to the batch it has.
  const size_t n = speed.size();
  std::vector<double> weight(n, 0);
  std::vector<int64_t> lo(n);
  std::vector<int64_t> hi(n);
  for (size_t w = 0; w < n; ++w) {
    if (speed[w] > 0 && std::isfinite(speed[w])) {
      weight[w] = speed[w];
      lo[w] = 1;
      hi[w] = caps[w] > 0 ? caps[w] : kNoBatchCap;
    } else {
      lo[w] = current[w];
      hi[w] = current[w];
    }
  }
  const int64_t target = BatchTarget(global_batch, caps);
  std::vector<int64_t> batch = Distribute(target, weight, lo, hi);
  // Only when the predicted workers are all at their caps is anything left;
  // it goes back to the pinned workers that have room.
  int64_t left = target;
  for (int64_t b : batch) left -= b;
  for (size_t w = 0; w < n && left > 0; ++w) {
    const int64_t room = caps[w] > 0 ? caps[w] - batch[w] : left;
    const int64_t add = std::min(left, room);
    batch[w] += add;
    left -= add;
  }
  return batch;
}

}  // namespace dmlps::predict
