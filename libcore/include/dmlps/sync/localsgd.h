// Local SGD with an outer optimizer: DiLoCo (Douillard et al., "DiLoCo:
// Distributed Low-Communication Training of Language Models", 2023), and its
// asynchronous form (Liu et al., "Asynchronous Local-SGD Training for
// Language Modeling", 2024).
#ifndef DMLPS_SYNC_LOCALSGD_H_
#define DMLPS_SYNC_LOCALSGD_H_

#include <string>
#include <vector>

#include "dmlps/sync/policy.h"

namespace dmlps::sync {

// Synchronous rounds of H local steps (localsgd): each worker trains a copy
// of the round's model for H steps and pushes its pseudo-gradient (the
// model it started from minus its copy). The round is BSP's: it closes once
// every live worker pushed a pseudo-gradient computed on the current
// version, and their sample-weighted mean goes through the server's outer
// optimizer (UsesOuterOptimizer) once, so the server runs it as a
// BspPolicy named "localsgd". With H = 1, an outer SGD of learning rate 1
// and no momentum, a round is one BSP step.

// Asynchronous local SGD: a worker pushes its pseudo-gradient once its local
// steps are done and goes on at once from the model it gets back; the server
// stages each usable push and steps the model with the outer optimizer on
// arrival, scaled 1/N (N live), so N pushes move it about as far as one
// synchronous round. No pull is ever held. With DyLU (Dynamic Local Updates)
// each reply carries the worker's local step count: H for the fastest live
// worker, H times its speed over the fastest's for the others, at least 1,
// speeds measured from the workers' pushes (samples over busy time). The
// delayed Nesterov momentum lives in the server's optimizer
// (ServerOptimizerFor, optim::DelayedMomentum).
class AsyncLocalSgdPolicy : public Policy {
 public:
  // REQUIRES: local_steps >= 1.
  AsyncLocalSgdPolicy(int64_t num_workers, int64_t local_steps, bool dylu);
  std::string Name() const override { return "async-localsgd"; }
  // The local steps worker w is told to take next (DyLU), H without DyLU.
  int64_t local_steps(WorkerId w) const;

 protected:
  void OnPush(WorkerId w, const PushInfo& push, Actions* out) override;
  bool MayStart(WorkerId /*w*/) const override { return true; }
  void BeforeReply(WorkerId w, Actions* out) override;
  // A worker that joins starts with no speed measured, at H steps; one gone
  // no longer counts as the fastest.
  void OnJoin(WorkerId w, const WorkerInfo& info, Actions* out) override;
  void OnLeave(WorkerId w, Actions* out) override;
  void OnAddWorker() override { speed_.push_back(0); }

 private:
  int64_t local_steps_;
  bool dylu_;
  std::vector<double> speed_;  // samples per second of busy time; 0: not measured
};

}  // namespace dmlps::sync

#endif  // DMLPS_SYNC_LOCALSGD_H_
