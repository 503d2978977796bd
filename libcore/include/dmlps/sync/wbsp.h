// Worker-Busy Synchronous Parallel (Yang et al., Parallel Computing 2024).
#ifndef DMLPS_SYNC_WBSP_H_
#define DMLPS_SYNC_WBSP_H_

#include <vector>

#include "dmlps/sync/policy.h"

namespace dmlps::sync {

// Workers train local copies and push the model delta of every local step
// without waiting. Deltas are staged (weight 1) as they arrive. A round closes
// when every joined worker has pushed at least once in it; the push that
// closes it comes from the round's slowest worker, found dynamically. At the
// close the server applies model += (1/N) * (sum of the round's deltas), the
// only time the global model changes, and flags every worker to download.
// Every push is answered at once with Continue(download = the worker's flag);
// a download (pull) is answered at once and clears the flag. So no worker
// ever waits for another, and all downloads within a round get one version.
class WbspPolicy : public Policy {
 public:
  // overlap: the workers run compute and communication on two threads
  // ("wbsp-overlap"); the server side is the same.
  WbspPolicy(int64_t num_workers, bool overlap);
  std::string Name() const override { return overlap_ ? "wbsp-overlap" : "wbsp"; }
  int64_t iteration() const override { return round_; }

 protected:
  void OnPush(WorkerId w, const PushInfo& push, Actions* out) override;
  bool MayStart(WorkerId w) const override { return true; }
  void BeforeReply(WorkerId w, Actions* out) override;
  void OnJoin(WorkerId w, const WorkerInfo& info, Actions* out) override;
  // The round waits for the live workers only; deltas the worker gone
  // pushed in it stay staged and count at the close.
  void OnLeave(WorkerId w, Actions* out) override;
  void OnAddWorker() override;
  void OnRestore(const PolicyState& state) override { round_ = state.iteration; }

 private:
  // Ends the round once every live worker pushed in it.
  void MaybeCloseRound(Actions* out);

  bool overlap_;
  int64_t round_ = 0;
  int64_t staged_ = 0;  // deltas staged in the current round
  std::vector<bool> pushed_this_round_;
  int64_t pushed_count_ = 0;  // workers with pushed_this_round_ set
  std::vector<bool> must_download_;
};

}  // namespace dmlps::sync

#endif  // DMLPS_SYNC_WBSP_H_
