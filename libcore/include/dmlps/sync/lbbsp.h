// LB-BSP: semi-dynamic load balancing (Chen et al., SoCC 2020).
#ifndef DMLPS_SYNC_LBBSP_H_
#define DMLPS_SYNC_LBBSP_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "dmlps/predict/predictor.h"
#include "dmlps/sync/policy.h"

namespace dmlps::sync {

// The predictor settings a policy configuration names.
predict::PredictorOptions PredictorOptionsFor(const PolicyConfig& config);

// BSP with per-worker batch sizes b_i, fixed within an iteration and re-set
// every `rebalance_every` iterations so that all workers finish together,
// with sum_i b_i = B (= batch * N) at all times, every b_i in [1, cap_i].
// Aggregation is batch-size weighted: sum_i (b_i / B) g_i. Each worker's batch
// is sent with its model (SetBatch before ReplyModel).
//   cpu mode (analytic): b_i = B * v_i / sum_j v_j, v_i the predicted speed
//     of worker i (samples per second of computing, emulated slowness and
//     sending), rounded to integers by largest remainder and clipped to the
//     caps.
//   gpu mode (numerical): over a window of iterations, the leader (fastest
//     mean iteration time among workers below their cap) takes `step` samples
//     from the straggler (slowest). When leader and straggler swap places
//     (the move overshot), the step halves (at least 1) and the window
//     doubles: the fine-tune phase after the fast approach.
class LbBspPolicy : public BspPolicy {
 public:
  // REQUIRES: config.name == "lbbsp", valid sizes (MakePolicy checks).
  explicit LbBspPolicy(const PolicyConfig& config);
  std::string Name() const override { return "lbbsp"; }

  // Worker w's current batch size.
  int64_t batch(WorkerId w) const { return batch_[w]; }
  // The global batch B.
  int64_t global_batch() const { return global_batch_; }
  // gpu mode: samples moved per rebalance now, and whether fine-tuning.
  int64_t step() const { return step_; }
  bool fine_tuning() const { return fine_tuning_; }

 protected:
  void OnJoin(WorkerId w, const WorkerInfo& info, Actions* out) override;
  void OnArrival(WorkerId w, const PushInfo& push, bool first, Actions* out) override;
  void OnRoundClosed(Actions* out) override;
  void BeforeReply(WorkerId w, Actions* out) override;
  // After a worker is gone or joins a running job, B is split again over the
  // live workers in proportion to their batches (a newcomer weighs as their
  // mean); a worker not live has batch 0. Its predictor starts afresh.
  void OnLeave(WorkerId w, Actions* out) override;
  void OnAddWorker() override;
  std::vector<int64_t> SaveExtra() const override;
  void OnRestore(const PolicyState& state) override;

 private:
  // Splits B over the live workers as OnLeave says.
  void Resplit();
  // Worker w's predictor and window, as for a worker never seen.
  void ForgetSpeed(WorkerId w);
  void Rebalance();
  void RebalanceAnalytic();
  void RebalanceNumerical();

  PolicyConfig config_;
  int64_t global_batch_;
  std::vector<int64_t> batch_;
  std::vector<int64_t> cap_;
  std::vector<std::unique_ptr<predict::SpeedPredictor>> predictors_;
  // gpu mode: busy seconds summed over the window, per worker, and its state.
  std::vector<double> window_time_;
  std::vector<int64_t> window_steps_;
  int64_t window_ = 0;
  int64_t window_start_ = 0;
  int64_t first_step_ = 0;  // the fast approach's step
  int64_t step_ = 0;
  bool fine_tuning_ = false;
  WorkerId last_leader_ = -1;
  WorkerId last_straggler_ = -1;
  // Workers have come and gone since the run started: joins split B anew.
  bool reshaped_ = false;
};

}  // namespace dmlps::sync

#endif  // DMLPS_SYNC_LBBSP_H_
