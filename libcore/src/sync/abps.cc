#include "dmlps/sync/abps.h"

namespace dmlps::sync {

void AbpsPolicy::OnArrival(WorkerId w, const PushInfo& push, bool first, Actions* out) {
  if (!first) return;
  // The round's first push: everyone still computing stops after its current
  // chunk. Only the first push sends these, so each worker hears it at most
  // once per round. A worker has pushed in the round iff its clock is past it.
  for (WorkerId u = 0; u < num_workers(); ++u) {
    if (u != w && joined(u) && clock(u) <= round()) out->push_back(SyncNow{u, round()});
  }
}

}  // namespace dmlps::sync
