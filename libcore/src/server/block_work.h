// The float work of a ModelStore's operations (model_store.h) on one block
// of a lane: the sums into the gradient accumulator, an optimizer step's
// check and its apply, the copy into a snapshot.
#ifndef DMLPS_SERVER_BLOCK_WORK_H_
#define DMLPS_SERVER_BLOCK_WORK_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "dmlps/proto/codec.h"
#include "server/store_ops.h"

namespace dmlps::server {

// Holds the accumulator. Run may be called from several threads at once
// over disjoint ranges of floats; each float's operations run in the order
// queued, so that the model ends bit for bit where one thread would take it.
class BlockWork {
 public:
  // The accumulator of a model cut as `layout` says, all zero.
  explicit BlockWork(const proto::ChunkLayout& layout)
      : layout_(layout), accumulator_(static_cast<size_t>(layout.size), 0.f) {}

  // The floats from `begin` on are module state (ModelStore::set_state_begin):
  // averaged rather than stepped, and never bounded.
  void set_state_begin(int64_t begin) { state_begin_ = begin; }

  // Runs `op` on floats [from, to) of lane `lane`, whose values are at
  // `params` (and its candidate buffer at `out`, or null); `fill`: copy
  // them into its point. The norm bound and the clipping round are taken
  // into `op` already (PushBound).
  void Run(const StoreOp& op, float* params, float* out, int64_t lane, int64_t from, int64_t to,
           bool fill);

 private:
  // Run's work on parameters [from, to), and on module state [from, to).
  void RunParams(const StoreOp& op, float* lane_params, float* lane_out, int64_t lane, int64_t from,
                 int64_t to, bool fill);
  void RunState(const StoreOp& op, float* lane_params, float* lane_out, int64_t lane, int64_t from,
                int64_t to);
  // kCombine over floats [from, to).
  // `state`: over module state, whose values are never bounded.
  void RunCombine(const StoreOp& op, int64_t from, int64_t to, bool state = false);

  proto::ChunkLayout layout_;
  std::vector<float> accumulator_;
  int64_t state_begin_ = std::numeric_limits<int64_t>::max();
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_BLOCK_WORK_H_
