#include "dmlps/worker/epoch_cursor.h"

#include <algorithm>
#include <numeric>

namespace dmlps::worker {

EpochCursor::EpochCursor(int64_t rows, uint64_t seed) : order_(rows), rng_(seed) {
  std::iota(order_.begin(), order_.end(), 0);
  std::shuffle(order_.begin(), order_.end(), rng_);
}

void EpochCursor::Take(int64_t n, std::vector<int64_t>* indices) {
  indices->clear();
  while (static_cast<int64_t>(indices->size()) < n) {
    if (next_ == order_.size()) {
      std::shuffle(order_.begin(), order_.end(), rng_);
      next_ = 0;
      ++epoch_;
    }
    indices->push_back(order_[next_++]);
  }
}

void EpochCursor::Skip(int64_t n) {
  while (n > 0) {
    if (next_ == order_.size()) {
      std::shuffle(order_.begin(), order_.end(), rng_);
      next_ = 0;
      ++epoch_;
    }
    const auto step = std::min<int64_t>(n, static_cast<int64_t>(order_.size() - next_));
    next_ += static_cast<size_t>(step);
    n -= step;
  }
}

}  // namespace dmlps::worker
