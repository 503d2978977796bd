// What the simulated worker's local modes that push less often than they
// step carry from step to step (sim/worker.h).
#ifndef DMLPS_SIM_LOCAL_STEPS_H_
#define DMLPS_SIM_LOCAL_STEPS_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "dmlps/sync/policy.h"
#include "sim/step_timing.h"

namespace dmlps::sim {

// local-overlap's hand-over between its two loops (worker/local_overlap.cc):
// the deltas of the local steps the communication loop has not pushed yet,
// the delta it is pushing, and a model it downloaded, which the compute loop
// adopts when its step ends.
class OverlapHandover {
 public:
  // Nothing pending, for a model of `n` parameters.
  void Reset(size_t n) {
    pending_.assign(n, 0.f);
    in_flight_.assign(n, 0.f);
  }
  // A local step moved the model by -lr * velocity, in `step`'s times.
  void AddStep(std::span<const float> velocity, float lr, const StepTimes& step);
  bool HasPending() const { return steps_ > 0; }
  // Moves the deltas pending in flight: the push of clock `clock` on
  // version `version` that carries them.
  sync::PushInfo TakePending(int64_t clock, int64_t version, int64_t batch);
  // The delta being pushed.
  std::span<const float> in_flight() const { return in_flight_; }
  void Download(std::shared_ptr<const std::vector<float>> model) { downloaded_ = std::move(model); }
  // Once a model was downloaded: `params` becomes it plus the deltas
  // computed since the last hand-over, and the download is spent.
  void AdoptDownload(std::span<float> params);

 private:
  std::vector<float> pending_;
  std::vector<float> in_flight_;
  int64_t steps_ = 0;  // pending
  int64_t samples_ = 0;
  double busy_s_ = 0;
  std::shared_ptr<const std::vector<float>> downloaded_;  // null: none
};

// local-sgd's round: the model it started from, and its local steps so far
// with their times summed.
class LocalSgdRound {
 public:
  void Begin(const std::vector<float>& params) {
    start_ = params;
    done_ = 0;
    times_ = {};
  }
  void Add(const StepTimes& step) {
    ++done_;
    times_.samples += step.samples;
    times_.compute += step.compute;
    times_.straggle += step.straggle;
  }
  int64_t done() const { return done_; }
  const StepTimes& times() const { return times_; }
  // acc += weight * the round's pseudo-gradient θ_start − θ_local, where
  // `params` is θ_local.
  void AddPseudoGradient(std::span<const float> params, float weight, std::span<float> acc) const;

 private:
  std::vector<float> start_;
  int64_t done_ = 0;
  StepTimes times_;  // no run_wait: local-sgd's pushes report none
};

}  // namespace dmlps::sim

#endif  // DMLPS_SIM_LOCAL_STEPS_H_
