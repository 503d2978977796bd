// What a ModelStore (model_store.h) does to a round's pushes as a whole
// before any lane sums them: each scaled down to the norm bound, and the
// round of centred clipping over them. Both need every push whole.
#ifndef DMLPS_SERVER_PUSH_BOUND_H_
#define DMLPS_SERVER_PUSH_BOUND_H_

#include <cstdint>
#include <limits>

#include "server/store_ops.h"

namespace dmlps::server {

class PushBound {
 public:
  // For a model of `size` floats.
  explicit PushBound(int64_t size) : size_(size) {}

  // ModelStore::set_max_norm: the L2 norm a push is scaled down to (0: none).
  void set_max_norm(double max_norm) { max_norm_ = max_norm; }
  // The floats from `begin` on are module state, which neither the bound
  // nor centred clipping reads (ModelStore::set_state_begin).
  void set_state_begin(int64_t begin) { state_begin_ = begin; }

  // Whether `op` needs its pushes whole before a lane runs it.
  bool NeedsWhole(const StoreOp& op) const { return max_norm_ > 0 || op.clipper != nullptr; }
  // Takes the norm bound into `op` (kStage: its weight; kCombine: its
  // factors) and runs its round of centred clipping, once. REQUIRES: its
  // pushes complete or closed, when NeedsWhole(op).
  void Take(StoreOp& op) const;

 private:
  // The centred clipping round of `op`, its pushes bounded.
  void ClipRound(StoreOp& op) const;

  int64_t size_ = 0;
  double max_norm_ = 0;
  int64_t state_begin_ = std::numeric_limits<int64_t>::max();
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_PUSH_BOUND_H_
