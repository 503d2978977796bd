// Clipping of an optimizer step's gradient in a ModelStore (model_store.h)
// to an L2 norm over the whole model, as torch.nn.utils.clip_grad_norm_
// does; when the store holds a server shard's slice, the norm is the one
// over every shard's slice (docs/optimizers.md, Clipping).
#ifndef DMLPS_SERVER_STEP_CLIP_H_
#define DMLPS_SERVER_STEP_CLIP_H_

#include <cstdint>
#include <functional>
#include <utility>

#include "dmlps/proto/codec.h"
#include "server/store_ops.h"

namespace dmlps::server {

class StepClip {
 public:
  // Hears a slice's sum of squares of step `step`'s gradient.
  using NormReport = std::function<void(int64_t step, double squares)>;

  // ModelStore::set_clip_norm: the norm a step's gradient is scaled down to
  // (0: none).
  void set_clip_norm(double clip_norm) { clip_norm_ = clip_norm; }
  // ModelStore::set_shared_norm: the norm is the whole model's, `report`
  // gets this slice's sum of squares.
  void set_shared_norm(NormReport report) { report_ = std::move(report); }
  // Whether a step taken by an optimizer is clipped.
  bool on() const { return clip_norm_ > 0; }

  // Readies `verdict` for a clipped step over a model cut as `layout`
  // says: a slot a block (StepVerdict::Slot), every lane yet to sum.
  void Prepare(StepVerdict& verdict, const proto::ChunkLayout& layout) const;
  // Whether a clipped step's norm is known: every lane of this store
  // summed, and with a shared norm the sum over every slice given.
  static bool Known(const StepVerdict& verdict) {
    return verdict.norm_lanes_left == 0 && (!verdict.shared || verdict.global_squares.has_value());
  }
  // One lane summed its squares for `verdict`; after the last, a shared
  // norm's report gets this slice's sum.
  void Summed(StepVerdict& verdict) const;
  // Scales a clipped step's gradient by clip_norm / norm, once. REQUIRES: Known(verdict).
  void Clip(StepVerdict& verdict) const;

 private:
  double clip_norm_ = 0;
  NormReport report_;
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_STEP_CLIP_H_
