// What auto reads of the cores its workers share (docs/auto-readings.md,
// "Shared cores"): where every live worker runs on the server's host, at
// most that host's cores; and the fewest shared cores a decision read,
// which hold for the rest of the run.
#ifndef DMLPS_AUTO_SHARED_CORES_H_
#define DMLPS_AUTO_SHARED_CORES_H_

#include <cstdint>
#include <vector>

#include "dmlps/advise/advisor.h"
#include "dmlps/sync/policy.h"

namespace dmlps::autopolicy {

class SharedCores {
 public:
  explicit SharedCores(int64_t num_workers) : host_cores_(num_workers, 0) {}

  // Worker w runs on a host of `host_cores` cores where it is the server's
  // (sync::WorkerInfo::host_cores; 0: elsewhere or unknown).
  void WorkerJoined(sync::WorkerId w, int64_t host_cores) { host_cores_[w] = host_cores; }
  void WorkerGone(sync::WorkerId w) { host_cores_[w] = 0; }
  void AddRank() { host_cores_.push_back(0); }

  // Whether the workers are known to share cores: a decision read so, or
  // more live workers run on the server's host than it has cores.
  bool Known(const sync::Policy& policy) const { return cores_ > 0 || CrowdedCores(policy) > 0; }
  // Sets profile->cores from the fewest cores read so far, at most the
  // host's where every live worker runs on the server's host; after a
  // lasting change there (`after_change`, at this decision or the one
  // before), from the reading now.
  void Read(const sync::Policy& policy, bool after_change, advise::ClusterProfile* profile);
  // The fewest shared cores read (0: not shared).
  int64_t cores() const { return cores_; }

 private:
  // The cores of the server's host where every live worker runs there,
  // else 0; into *live, if given, the live workers.
  int64_t ServerHostCores(const sync::Policy& policy, int64_t* live = nullptr) const;
  // ServerHostCores where the live workers outnumber them; else 0.
  int64_t CrowdedCores(const sync::Policy& policy) const;

  std::vector<int64_t> host_cores_;  // per rank, WorkerInfo::host_cores
  int64_t cores_ = 0;
  bool changed_before_ = false;  // the last decision followed a lasting change
};

}  // namespace dmlps::autopolicy

#endif  // DMLPS_AUTO_SHARED_CORES_H_
