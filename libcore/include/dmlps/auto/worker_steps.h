// What auto reads of each worker's pushes (docs/auto-readings.md, "Each
// worker's steps"): its last measured steps, the lasting changes of its
// speed, whether its step times can be read at all, and the cluster
// profile the live workers' steps since their last change make.
#ifndef DMLPS_AUTO_WORKER_STEPS_H_
#define DMLPS_AUTO_WORKER_STEPS_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "dmlps/advise/advisor.h"
#include "dmlps/sync/policy.h"

namespace dmlps::autopolicy {

class WorkerSteps {
 public:
  static constexpr int64_t kMinSteps = 6;
  static constexpr int64_t kWindow = 30;  // steps kept per worker

  explicit WorkerSteps(int64_t num_workers) : history_(num_workers) {}

  // Records w's push; true when it shows a new lasting change (on lower
  // quartiles: steps delayed now and then are no change).
  bool Measure(sync::WorkerId w, const sync::PushInfo& push);
  // Whether worker w's last kMinSteps pushes, or more, reported step times
  // it cannot read: profiles leave it out rather than wait for it.
  bool LeftOut(sync::WorkerId w) const { return history_[w].unreadable >= kMinSteps; }
  // Forgets what worker w's steps showed (it left: its rank's next is another).
  void Forget(sync::WorkerId w) { history_[w] = {}; }
  void AddRank() { history_.emplace_back(); }

  // The live workers' profile at `batch` samples a step, and into *delayed
  // the delayed steps it read; nothing until each has kMinSteps steps since
  // its last lasting change. `known_shared`: the workers are known to share
  // cores (else they do where their steps read so), which the profile reads
  // as the host's work (docs/auto-readings.md, "Shared cores").
  std::optional<advise::ClusterProfile> Profile(const sync::Policy& policy, int64_t batch,
                                                bool known_shared, int64_t* delayed) const;

 private:
  struct History {
    std::deque<double> per_sample;  // seconds of computing per sample, newest last
    std::deque<double> overhead;    // seconds per step beyond computing
    std::deque<double> core_share;  // the share of each step's computing that had a core
    std::deque<double> comm;        // seconds the push before each took to send
    std::deque<double> whole;       // seconds per sample computing and sending (changes sought in)
    std::deque<double> slowness;    // each step's time over its computing (>= 1)
    std::deque<double> work;        // seconds per sample each step computed on a core
    std::deque<int64_t> clock;      // the worker's clock of each step
    int64_t steps = 0;              // measured in all
    int64_t change_at = 0;          // the step the last lasting change was seen at
    int64_t unreadable = 0;         // pushes in a row whose step time it could not read
    bool warned = false;            // that it was left out for them, logged
  };

  std::vector<History> history_;  // per rank
};

}  // namespace dmlps::autopolicy

#endif  // DMLPS_AUTO_WORKER_STEPS_H_
