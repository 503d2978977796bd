// The order in which a worker visits its shard: a fresh shuffle per epoch,
// consumed only as far as samples are actually processed.
#ifndef DMLPS_WORKER_EPOCH_CURSOR_H_
#define DMLPS_WORKER_EPOCH_CURSOR_H_

#include <cstdint>
#include <random>
#include <vector>

namespace dmlps::worker {

// Hands out sample indices of [0, rows) in shuffled epochs. Whatever is not
// taken stays first in line, so a step cut short (A-BSP's SyncNow) leaves its
// unprocessed samples to the next step and every sample is processed exactly
// once per epoch.
class EpochCursor {
 public:
  // REQUIRES: rows >= 1.
  EpochCursor(int64_t rows, uint64_t seed);

  // Replaces *indices with the next n indices, crossing into a newly
  // shuffled epoch when this one runs out.
  void Take(int64_t n, std::vector<int64_t>* indices);
  // Passes over the next n indices as Take would hand them out.
  void Skip(int64_t n);
  // Completed epochs so far.
  int64_t epoch() const { return epoch_; }

 private:
  std::vector<int64_t> order_;
  size_t next_ = 0;
  int64_t epoch_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace dmlps::worker

#endif  // DMLPS_WORKER_EPOCH_CURSOR_H_
