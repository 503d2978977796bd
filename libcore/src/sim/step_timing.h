// How long a simulated worker's steps take, as dmlps-worker times them and
// slows them down (sim/worker.h).
#ifndef DMLPS_SIM_STEP_TIMING_H_
#define DMLPS_SIM_STEP_TIMING_H_

#include <cstdint>
#include <memory>
#include <random>

#include "dmlps/sim/sim.h"
#include "dmlps/worker/straggler.h"

namespace dmlps::sim {

// The seed dmlps-worker of rank `rank` samples its data with, and mixes
// into its delays (whose own seed is 0).
uint64_t WorkerSeed(const SimConfig& config, int64_t rank);

// What makes a worker's steps slower than their work, drawn as dmlps-worker
// draws it: its straggler profile (worker::StragglerProfile: delays,
// slowdown, a bandwidth cap) and the noise factor of its steps
// (SimConfig::noise).
class WorkerSlowness {
 public:
  // Worker `rank`'s, seeded as dmlps-worker seeds its delays, and with
  // config.noise_seed mixed in.
  WorkerSlowness(const SimConfig& config, int64_t rank);

  // A step's noise factor (1 without noise).
  double DrawNoise();
  // The emulated slowness after a computation of `compute_s` seconds of
  // step `step`, in seconds, as dmlps-worker's Compute sleeps it: the
  // profile's delays when it is the first part of the step's work, else
  // only what the slowdown adds.
  double StraggleSeconds(int64_t step, double compute_s, bool first_part);
  // Seconds the bandwidth cap takes to send `bytes` with push `clock`.
  double TransferSeconds(int64_t clock, int64_t bytes) const;

 private:
  worker::StragglerProfile straggler_;
  Noise noise_;
  // Drawn from only with noise: 2.5 KB a worker, made only then.
  std::unique_ptr<std::mt19937_64> rng_;
};

// The times of a step, or of a round of local steps, as the push that
// reports them counts them (sync::PushInfo).
struct StepTimes {
  int64_t samples = 0;  // computed
  double compute = 0;   // computing, local updates included
  double straggle = 0;  // the emulated slowness after it
  // Shared cores: of compute, the time beyond the work at its shared speed,
  // which a real worker's kernel counts as waiting for a core.
  double run_wait = 0;
};

// The step under way: its jobs (the batch, a chunk or a token to compute;
// a local update), what each took, and the slowness its computing implies.
class StepTiming {
 public:
  // Worker `rank`'s; REQUIRES: config outlives this.
  StepTiming(const SimConfig& config, int64_t rank) : config_(config), slowness_(config, rank) {}

  // Begins step `step`, as StragglerProfile counts steps, drawing its noise.
  void Begin(int64_t step);
  // What a compute job runs: its work alone on a core, and its speed beside
  // others (CostModel::SharedSpeed).
  struct Job {
    double work = 0;
    double shared_speed = 1;
  };
  // A compute job of `samples` begins at `now`.
  Job StartCompute(int64_t samples, double now);
  // What a compute job took: its computing, and the slowness after it.
  struct Computed {
    double compute_s = 0;
    double straggle_s = 0;
  };
  // The compute job ended at `now`: counted into times(). `token`: the step
  // is a token, the first part of its iteration's work when it is the first
  // on that version (else when it is the step's first job).
  Computed EndCompute(double now, bool token);
  // A local update begins at `now`, or ended there: its seconds, counted
  // into times() as computing.
  void StartUpdate(double now) { job_start_ = now; }
  double EndUpdate(double now);

  // The step's times so far.
  const StepTimes& times() const { return times_; }
  int64_t step() const { return step_; }
  // Seconds the bandwidth cap takes to send `bytes` with push `clock`.
  double TransferSeconds(int64_t clock, int64_t bytes) const {
    return slowness_.TransferSeconds(clock, bytes);
  }

 private:
  const SimConfig& config_;
  WorkerSlowness slowness_;
  int64_t step_ = 0;
  int64_t straggled_step_ = -1;  // token: the last step whose delays were drawn
  StepTimes times_;
  double noise_ = 1;
  int64_t job_samples_ = 0;  // of the compute job running
  double job_start_ = 0;
  double job_work_ = 0;  // the compute job's work at its shared speed
};

}  // namespace dmlps::sim

#endif  // DMLPS_SIM_STEP_TIMING_H_
