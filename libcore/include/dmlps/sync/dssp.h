// Dynamic stale synchronous parallel (Zhao et al., "Dynamic Stale
// Synchronous Parallel Distributed Training for Deep Learning", ICDCS 2019,
// arXiv 1908.11848).
#ifndef DMLPS_SYNC_DSSP_H_
#define DMLPS_SYNC_DSSP_H_

#include <string>
#include <vector>

#include "dmlps/sync/policy.h"

namespace dmlps::sync {

// SSP whose staleness bound is chosen per worker at each of its clocks
// within [low, high]: pushes apply on arrival (scaled 1/N) as under SSP, and
// a worker may start clock c while c - MinClock() <= its bound. The bound is
// low plus the extra clocks r in [0, high - low] that fit, at the worker's
// last iteration time, into the slowest live worker's last iteration time:
// the fast worker keeps going while the slowest is expected to finish its
// iteration, instead of waiting for it. With low == high it is SSP.
class DsspPolicy : public Policy {
 public:
  // REQUIRES: 0 <= low <= high.
  DsspPolicy(int64_t num_workers, int64_t low, int64_t high);
  std::string Name() const override;
  // Worker w's staleness bound now, in [low, high].
  int64_t bound(WorkerId w) const { return bound_[w]; }

 protected:
  void OnPush(WorkerId w, const PushInfo& push, Actions* out) override;
  bool MayStart(WorkerId w) const override { return clock(w) - MinClock() <= bound_[w]; }
  void OnJoin(WorkerId w, const WorkerInfo& info, Actions* out) override;
  // The slowest gone, the minimum clock may rise and free others.
  void OnLeave(WorkerId w, Actions* out) override;
  void OnAddWorker() override;

 private:
  // Worker w's bound from the iteration times seen so far.
  int64_t ChooseBound(WorkerId w) const;
  void MaybeRelease(Actions* out);

  int64_t low_;
  int64_t high_;
  std::vector<int64_t> bound_;
  std::vector<double> interval_;  // last iteration time seen per worker; 0: none yet
  int64_t released_at_min_clock_ = -1;
};

}  // namespace dmlps::sync

#endif  // DMLPS_SYNC_DSSP_H_
