// A-BSP: aggressive synchronization with partial processing (Wang et al.,
// Middleware 2018).
#ifndef DMLPS_SYNC_ABPS_H_
#define DMLPS_SYNC_ABPS_H_

#include "dmlps/sync/policy.h"

namespace dmlps::sync {

// BSP in which workers process their batch in chunks. The first push of a
// round (a worker that finished its whole batch) makes the server send
// SyncNow(round) to every joined worker that has not pushed in the round;
// each stops after its current chunk and pushes the mean gradient over the
// samples it did process. When all N have pushed the server applies the
// sample-weighted mean, sum_i S_i / sum_i n_i, once. As BSP, every gradient
// applied at version v was computed on v, and pulls wait for the round.
class AbpsPolicy : public BspPolicy {
 public:
  explicit AbpsPolicy(int64_t num_workers) : BspPolicy(num_workers) {}
  std::string Name() const override { return "abps"; }

 protected:
  void OnArrival(WorkerId w, const PushInfo& push, bool first, Actions* out) override;
};

}  // namespace dmlps::sync

#endif  // DMLPS_SYNC_ABPS_H_
