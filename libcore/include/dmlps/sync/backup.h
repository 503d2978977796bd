// Backup workers (Chen et al. 2016, "Revisiting Distributed Synchronous SGD").
#ifndef DMLPS_SYNC_BACKUP_H_
#define DMLPS_SYNC_BACKUP_H_

#include <vector>

#include "dmlps/sync/policy.h"

namespace dmlps::sync {

// Runs N workers but aggregates only the first N - b pushes computed on the
// current version (sample-weighted, as BSP), applies, and moves on; a push
// computed on an older version arrives late and is dropped as wasted work.
// A worker may fetch the model once it has not yet pushed on the current
// version, so the late worker starts again on the newest model at once.
class BackupPolicy : public Policy {
 public:
  // REQUIRES: 0 <= backup < num_workers.
  BackupPolicy(int64_t num_workers, int64_t backup);
  std::string Name() const override;  // "backup:B"
  int64_t iteration() const override { return round_; }

 protected:
  void OnPush(WorkerId w, const PushInfo& push, Actions* out) override;
  bool MayStart(WorkerId w) const override;
  void OnJoin(WorkerId w, const WorkerInfo& info, Actions* out) override;
  // The round needs N - b pushes of the workers live now; an on-time push of
  // the worker gone still counts (its gradient is as good as any).
  void OnLeave(WorkerId w, Actions* out) override;
  void OnAddWorker() override { last_pushed_round_.push_back(-1); }
  void OnRestore(const PolicyState& state) override { round_ = state.iteration; }
  // Between rounds: no on-time push of the round in progress is staged.
  bool AtBoundary() const override { return arrived_ == 0; }

 private:
  // Closes the round once it has the pushes it needs.
  void MaybeCloseRound(Actions* out);

  int64_t backup_;
  int64_t round_ = 0;
  int64_t arrived_ = 0;
  int64_t staged_samples_ = 0;
  std::vector<int64_t> last_pushed_round_;  // per worker; -1 before its first push
};

}  // namespace dmlps::sync

#endif  // DMLPS_SYNC_BACKUP_H_
