// Sync-Switch (Li et al., "Sync-Switch: Hybrid Parameter Synchronization for
// Distributed Deep Learning", ICDCS 2021, arXiv 2104.08364): BSP and ASP in
// one run, switched by SwitchingPolicy. The deciders below are the paper's
// two kinds of policy (docs/algorithms.md, "Sync-Switch").
#ifndef DMLPS_SYNC_SYNCSWITCH_H_
#define DMLPS_SYNC_SYNCSWITCH_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/sync/switching.h"

namespace dmlps::sync {

// The two policies Sync-Switch runs: the first, synchronous, and the
// second, asynchronous, that it switches to (and, online, back from).
inline constexpr std::string_view kSyncSwitchFirst = "bsp";
inline constexpr std::string_view kSyncSwitchSecond = "asp";

// Offline: BSP first, then ASP for the rest of the run once `fraction` of
// it is done. With a target accuracy, "done" is the accuracy progress
// (acc - acc_0) / (target - acc_0), acc_0 the first evaluation's (the
// untrained or resumed model's); without one, iterations over
// max_iterations.
class OfflineSwitch : public SwitchDecider {
 public:
  // REQUIRES: fraction in [0, 1]; target > 0 or max_iterations > 0.
  OfflineSwitch(double fraction, double target, int64_t max_iterations);
  std::string Name() const override;
  std::string Initial() const override { return std::string(kSyncSwitchFirst); }
  std::optional<SwitchRequest> AfterPush(const SwitchContext& context, WorkerId w,
                                         const PushInfo& push) override;
  std::optional<SwitchRequest> AfterEvaluation(const SwitchContext& context,
                                               double accuracy) override;

 private:
  double fraction_;
  double target_;
  int64_t max_iterations_;
  std::optional<double> first_accuracy_;
};

// Online: BSP while the workers run alike; ASP while a transient straggler
// is seen. Worker i's recent iteration time m_i is the mean of its last
// kWindow (the server's time from its reply to the push, else the worker's
// busy and sending time). A worker whose m_i exceeds kFactor times the
// median of the others' is a straggler: under BSP that switches to ASP.
// Under ASP, once the straggler's own m_i is back within kFactor and no
// worker was a straggler for kCalmIterations iterations, back to BSP.
class OnlineSwitch : public SwitchDecider {
 public:
  static constexpr int64_t kWindow = 5;
  static constexpr double kFactor = 2.0;
  static constexpr int64_t kCalmIterations = 5;

  explicit OnlineSwitch(int64_t num_workers);
  std::string Name() const override { return "sync-switch:online"; }
  std::string Initial() const override { return std::string(kSyncSwitchFirst); }
  std::optional<SwitchRequest> AfterPush(const SwitchContext& context, WorkerId w,
                                         const PushInfo& push) override;
  std::optional<SwitchRequest> AfterEvaluation(const SwitchContext& context,
                                               double accuracy) override {
    return std::nullopt;
  }
  void WorkerGone(WorkerId w) override;
  void RankAdded() override { recent_.emplace_back(); }

 private:
  // Mean of worker w's window; 0 until it is full.
  double Mean(WorkerId w) const;
  // The median of the full windows' means of the live workers but w; 0 if none.
  double OthersMedian(const Policy& policy, WorkerId w) const;

  std::vector<std::deque<double>> recent_;  // per worker, the last kWindow times
  WorkerId straggler_ = -1;                 // the last straggler seen; -1: none
  int64_t last_seen_iteration_ = 0;         // when a straggler was last seen
};

// The settings sync-switch refuses: a switch_at outside [0, 1], or one it
// cannot place (no target_accuracy nor max_iterations, and not online).
Status CheckSyncSwitch(const PolicyConfig& config);
// The sync-switch policy `config` asks for (switch_at, switch_online,
// target_accuracy, max_iterations). REQUIRES: CheckSyncSwitch passed.
std::unique_ptr<Policy> MakeSyncSwitch(const PolicyConfig& config);

}  // namespace dmlps::sync

#endif  // DMLPS_SYNC_SYNCSWITCH_H_
