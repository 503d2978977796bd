#include "sim/step_timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numbers>

namespace dmlps::sim {
namespace {

using std::chrono::microseconds;

// splitmix64's finalizer: spreads a seed over all 64 bits.
uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A uniform double in [0, 1) from the top 53 bits of one draw, the same with
// any standard library (as StragglerProfile draws).
double Uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

// What config.noise_seed mixes into a worker's delays and noise.
uint64_t NoiseMix(const SimConfig& config) {
  return config.noise_seed == 0 ? 0 : Mix64(config.noise_seed);
}

worker::StragglerProfile MakeStraggler(const SimConfig& config, int64_t rank) {
  worker::StragglerSpec spec = config.stragglers[static_cast<size_t>(rank)];
  spec.seed = WorkerSeed(config, rank) ^ NoiseMix(config);
  return worker::StragglerProfile(spec, rank, config.job.workers);
}

}  // namespace

uint64_t WorkerSeed(const SimConfig& config, int64_t rank) {
  return config.job.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(rank);
}

WorkerSlowness::WorkerSlowness(const SimConfig& config, int64_t rank)
    : straggler_(MakeStraggler(config, rank)) {
  if (!config.noise.empty()) noise_ = config.noise[static_cast<size_t>(rank)];
  if (noise_.jitter > 0 || noise_.heavy_tail > 0) {
    rng_ = std::make_unique<std::mt19937_64>(
        Mix64(WorkerSeed(config, rank) ^ Mix64(NoiseMix(config) ^ 0x6e6f697365ULL)));
  }
}

double WorkerSlowness::DrawNoise() {
  double factor = 1;
  if (noise_.jitter > 0) {
    // Box-Muller on our own uniforms: the same factors with any library.
    const double u1 = 1 - Uniform(*rng_);  // (0, 1]
    const double u2 = Uniform(*rng_);
    const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
    factor *= std::exp(noise_.jitter * z);
  }
  if (noise_.heavy_tail > 0) {
    const double u = 1 - Uniform(*rng_);  // (0, 1]
    factor *= std::pow(u, -1 / noise_.heavy_tail);
  }
  return factor;
}

double WorkerSlowness::StraggleSeconds(int64_t step, double compute_s, bool first_part) {
  const microseconds compute_us(std::llround(compute_s * 1e6));
  const microseconds straggle =
      first_part ? straggler_.ExtraDelay(step, compute_us)
                 : microseconds(std::llround((straggler_.SlowdownAt(step) - 1) *
                                             static_cast<double>(compute_us.count())));
  return static_cast<double>(straggle.count()) * 1e-6;
}

double WorkerSlowness::TransferSeconds(int64_t clock, int64_t bytes) const {
  return static_cast<double>(straggler_.TransferTime(clock, bytes).count()) * 1e-6;
}

void StepTiming::Begin(int64_t step) {
  step_ = step;
  times_ = {};
  noise_ = slowness_.DrawNoise();
}

StepTiming::Job StepTiming::StartCompute(int64_t samples, double now) {
  job_samples_ = samples;
  job_start_ = now;
  const double work = config_.cost.StepSeconds(samples) * noise_;
  const double shared_speed = config_.cost.SharedSpeed(samples);
  job_work_ = shared_speed > 0 ? work / shared_speed : work;
  return {work, shared_speed};
}

StepTiming::Computed StepTiming::EndCompute(double now, bool token) {
  // As worker.cc's Compute: the measured compute, then the emulated slowness
  // it implies (a step's later chunks scale only with the slowdown).
  const double compute = now - job_start_;
  const bool first_part = token ? step_ != straggled_step_ : times_.samples == 0;
  straggled_step_ = step_;
  const double straggle_s = slowness_.StraggleSeconds(step_, compute, first_part);
  times_.samples += job_samples_;
  times_.compute += compute;
  if (config_.shared_cores > 0) times_.run_wait += std::max(0.0, compute - job_work_);
  times_.straggle += straggle_s;
  return {compute, straggle_s};
}

double StepTiming::EndUpdate(double now) {
  const double update = now - job_start_;
  times_.compute += update;
  return update;
}

}  // namespace dmlps::sim
