#include "sim/worker.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numbers>

#include "dmlps/base/flush_denormals.h"
#include "dmlps/optim/optimizer.h"

namespace dmlps::sim {
namespace {

using sync::WorkerMode;
using Vec = Eigen::Map<Eigen::VectorXf>;
using ConstVec = Eigen::Map<const Eigen::VectorXf>;
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

// As dmlps-worker seeds its sampling and its delays (whose own seed is 0).
uint64_t WorkerSeed(const SimConfig& config, int64_t rank) {
  return config.job.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(rank);
}

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

StepMath::StepMath(const model::ModelSpec& spec, const data::Dataset& train, int64_t threads,
                   bool math)
    : model(spec),
      train(train),
      pushes(spec, train, threads, math),
      grad(static_cast<size_t>(model.num_params()), 0.f),
      math(math),
      rows_kernel_(model::SoftmaxRowsFit(spec, train)) {}

void StepMath::LocalGradient(std::span<const float> params) {
  if (!math) return;  // grad stays all zeros
  if (rows_kernel_) {
    // The weights change at every local step, so they are laid out anew.
    model::SoftmaxRowsLoadWeights(model.spec(), params, &rows_);
    model::SoftmaxRowsLossAndGradient(model.spec(), params, train, indices, grad, &rows_);
    return;
  }
  train.Gather(indices, &x, &y);
  model.LossAndGradient(params, x, y, grad);
}

SimWorker::SimWorker(const SimConfig& config, WorkerMode mode, int64_t rank,
                     std::pair<int64_t, int64_t> shard, StepMath& math, WorkerHost& host)
    : config_(config),
      mode_(mode),
      rank_(rank),
      num_params_(math.model.num_params()),
      math_(math),
      host_(host),
      shard_first_(shard.first),
      cursor_(shard.second - shard.first, WorkerSeed(config, rank)),
      straggler_(MakeStraggler(config, rank)),
      batch_(config.job.batch) {
  if (!config.noise.empty()) noise_ = config.noise[static_cast<size_t>(rank)];
  if (noise_.jitter > 0 || noise_.heavy_tail > 0) {
    rng_ = std::make_unique<std::mt19937_64>(
        Mix64(WorkerSeed(config, rank) ^ Mix64(NoiseMix(config) ^ 0x6e6f697365ULL)));
  }
}

// ---------------------------------------------------------------- events

void SimWorker::Receive(Message message) {
  if (message.kind == MessageKind::kSyncNow) {
    sync_round_ = std::max(sync_round_, message.round);
  } else if (message.kind == MessageKind::kModel) {
    ReceiveModel(message);
  } else if (message.kind == MessageKind::kContinue) {
    ReceiveContinue(message);
  } else {
    FailInternal("got a worker's message");
  }
}

void SimWorker::OnJobDone() {
  if (phase_ == Phase::kCompute) {
    OnComputeDone();
  } else {
    OnUpdateDone();
  }
}

void SimWorker::OnWake(WorkerThread thread) {
  if (thread == WorkerThread::kComm) {
    OnCommTransferDone();
  } else if (phase_ == Phase::kStraggle) {
    OnStraggleDone();
  } else {
    OnTransferDone();
  }
}

void SimWorker::FailInternal(std::string_view what) {
  host_.Fail("internal: worker " + std::to_string(rank_) + " " + std::string(what));
}

// ---------------------------------------------------------------- the server's side

Samples SimWorker::SamplesOf(const sync::PushInfo& /*push*/) {
  if (!Lazy()) return {};
  return math_.pushes.SamplesOf(rank_);
}

void SimWorker::AddPush(Samples samples, float weight, std::span<float> acc_span) {
  const auto n = static_cast<Eigen::Index>(num_params_);
  Vec acc(acc_span.data(), n);
  switch (mode_) {
    case WorkerMode::kSync:
    case WorkerMode::kChunked:
    case WorkerMode::kToken:
      // The mean gradient over the samples the step took, on the model the
      // step ran on: what the worker would have sent (SendPush expected it).
      (void)samples;
      acc += weight * ConstVec(math_.pushes.Take(rank_).data(), n);
      break;
    case WorkerMode::kLocal:
      // The step's delta, params_after - params_before = -lr * velocity.
      acc -= (weight * static_cast<float>(config_.job.lr)) * ConstVec(velocity_.data(), n);
      break;
    case WorkerMode::kLocalOverlap:
      acc += weight * ConstVec(in_flight_.data(), n);
      break;
    case WorkerMode::kLocalSgd:
      // The pseudo-gradient θ_start − θ_local of the H local steps.
      acc += weight * (ConstVec(start_.data(), n) - ConstVec(params_.data(), n));
      break;
  }
}

// ---------------------------------------------------------------- replies

void SimWorker::Pull() {
  Message pull;
  pull.kind = MessageKind::kPull;
  pull.worker = rank_;
  pull.clock = clock_;
  wait_start_ = host_.now();
  host_.SendToServer(rank_, kHeaderBytes, std::move(pull));
}

void SimWorker::ReceiveModel(Message& message) {
  const auto n = static_cast<size_t>(num_params_);
  const bool download = mode_ == WorkerMode::kLocalOverlap && phase_ != Phase::kAwaitModel;
  stats_.wait_s += host_.now() - wait_start_;
  replied_at_ = host_.now();
  version_ = message.version;
  if (message.batch > 0) batch_ = message.batch;
  if (message.local_steps > 0) local_steps_ = message.local_steps;
  token_ = message.token;
  switch (mode_) {
    case WorkerMode::kSync:
    case WorkerMode::kChunked:
    case WorkerMode::kToken:
      model_ = std::move(message.model);
      StartStep();
      break;
    case WorkerMode::kLocal:
      params_ = *message.model;
      if (velocity_.empty()) velocity_.assign(n, 0.f);
      StartStep();
      break;
    case WorkerMode::kLocalSgd:
      // A round of H local steps from the model; the inner velocity goes on.
      params_ = *message.model;
      start_ = params_;
      if (velocity_.empty()) velocity_.assign(n, 0.f);
      local_done_ = 0;
      round_samples_ = 0;
      round_compute_ = 0;
      round_straggle_ = 0;
      StartStep();
      break;
    case WorkerMode::kLocalOverlap:
      if (download) {
        // The communication thread hands it to the compute loop, which
        // adopts it when its current step ends.
        downloaded_ = std::move(message.model);
        has_download_ = true;
        comm_ = CommPhase::kIdle;
        MaybeCommPush();
      } else {
        params_ = *message.model;
        velocity_.assign(n, 0.f);
        pending_.assign(n, 0.f);
        in_flight_.assign(n, 0.f);
        StartStep();
      }
      break;
  }
}

void SimWorker::ReceiveContinue(const Message& message) {
  replied_at_ = host_.now();
  switch (mode_) {
    case WorkerMode::kLocal:
      stats_.wait_s += host_.now() - wait_start_;
      if (message.download) {
        phase_ = Phase::kAwaitModel;
        Pull();
      } else {
        StartStep();
      }
      break;
    case WorkerMode::kLocalOverlap:
      // Its wait is not counted: the compute loop goes on meanwhile.
      if (message.download) {
        comm_ = CommPhase::kAwaitModel;
        Pull();
      } else {
        comm_ = CommPhase::kIdle;
        MaybeCommPush();
      }
      break;
    case WorkerMode::kToken:
      stats_.wait_s += host_.now() - wait_start_;
      token_ = message.token;
      StartStep();
      break;
    case WorkerMode::kSync:
    case WorkerMode::kChunked:
    case WorkerMode::kLocalSgd:
      FailInternal("in a sync mode got a Continue");
      break;
  }
}

// ---------------------------------------------------------------- the step

double SimWorker::DrawNoise() {
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

void SimWorker::StartStep() {
  if (mode_ == WorkerMode::kLocalOverlap && has_download_) {
    // θ_local = θ_downloaded + the deltas computed since the last hand-over.
    const auto n = static_cast<Eigen::Index>(num_params_);
    Vec(params_.data(), n) = ConstVec(downloaded_->data(), n) + ConstVec(pending_.data(), n);
    downloaded_.reset();
    has_download_ = false;
  }
  if (mode_ == WorkerMode::kToken && token_ < 0) {
    FailInternal("got no token to train");
    return;
  }
  const bool counts_local = mode_ == WorkerMode::kLocalOverlap || mode_ == WorkerMode::kLocalSgd;
  // Tokens are parts of an iteration, the model's version (as worker/steps.cc).
  step_ = counts_local ? compute_steps_ : mode_ == WorkerMode::kToken ? version_ : clock_;
  step_samples_ = 0;
  step_compute_ = 0;
  step_straggle_ = 0;
  step_run_wait_ = 0;
  step_noise_ = DrawNoise();
  StartChunk();
}

void SimWorker::StartChunk() {
  int64_t samples = batch_;
  if (mode_ == WorkerMode::kChunked) {
    samples = std::min(config_.policy.chunk, batch_ - step_samples_);
  } else if (mode_ == WorkerMode::kToken) {
    samples = config_.policy.token_size;
  }
  job_samples_ = samples;
  job_start_ = host_.now();
  phase_ = Phase::kCompute;
  const double work = config_.cost.StepSeconds(samples) * step_noise_;
  const double shared_speed = config_.cost.SharedSpeed(samples);
  job_work_ = shared_speed > 0 ? work / shared_speed : work;
  host_.StartJob(rank_, work, shared_speed);
}

void SimWorker::OnComputeDone() {
  // As worker.cc's Compute: the measured compute, then the emulated slowness
  // it implies (a step's later chunks scale only with the slowdown).
  const double now = host_.now();
  const double compute = now - job_start_;
  const microseconds compute_us(std::llround(compute * 1e6));
  // A token is the first part of its iteration's work when it is the
  // worker's first on that version.
  const bool first_part =
      mode_ == WorkerMode::kToken ? step_ != straggled_step_ : step_samples_ == 0;
  straggled_step_ = step_;
  const microseconds straggle =
      first_part ? straggler_.ExtraDelay(step_, compute_us)
                 : microseconds(std::llround((straggler_.SlowdownAt(step_) - 1) *
                                             static_cast<double>(compute_us.count())));
  const double straggle_s = static_cast<double>(straggle.count()) * 1e-6;
  step_samples_ += job_samples_;
  step_compute_ += compute;
  if (config_.shared_cores > 0) step_run_wait_ += std::max(0.0, compute - job_work_);
  step_straggle_ += straggle_s;
  stats_.compute_s += compute;
  stats_.straggle_s += straggle_s;
  phase_ = Phase::kStraggle;
  if (straggle_s > 0) {
    host_.Wake(rank_, now + straggle_s, WorkerThread::kCompute);
  } else {
    OnStraggleDone();
  }
}

void SimWorker::OnStraggleDone() {
  switch (mode_) {
    case WorkerMode::kSync:
    case WorkerMode::kToken:
      StartPush();
      break;
    case WorkerMode::kChunked:
      // After each chunk the worker looks for SyncNow; told, it pushes what it has.
      if (step_samples_ >= batch_ || sync_round_ >= clock_) {
        StartPush();
      } else {
        StartChunk();
      }
      break;
    case WorkerMode::kLocal:
    case WorkerMode::kLocalOverlap:
    case WorkerMode::kLocalSgd: {
      // The local optimizer step: momentum and parameters (2 passes), then
      // the delta and the base copy (local: 2) or the pending sum (overlap:
      // 1); local-sgd: the pseudo-gradient after the last of its H steps (2).
      double passes = mode_ == WorkerMode::kLocal ? 4 : 3;
      if (mode_ == WorkerMode::kLocalSgd) passes = local_done_ + 1 < LocalSteps() ? 2 : 4;
      phase_ = Phase::kUpdate;
      job_start_ = host_.now();
      host_.StartJob(rank_, passes * static_cast<double>(num_params_) * config_.cost.param_s, 1);
      break;
    }
  }
}

void SimWorker::OnUpdateDone() {
  const double update = host_.now() - job_start_;
  step_compute_ += update;
  stats_.compute_s += update;
  // The step's math: its gradient on the local model, then the local step.
  TakeSamples(step_samples_);
  math_.LocalGradient(params_);
  const auto lr = static_cast<float>(config_.job.lr);
  const auto n = static_cast<Eigen::Index>(num_params_);
  {
    const FlushDenormals flush;
    optim::LocalMomentumStep(params_, velocity_, math_.grad, lr,
                             static_cast<float>(config_.job.momentum));
    // Overlap: the step moved the model by -lr * velocity; hand it over.
    if (mode_ == WorkerMode::kLocalOverlap) {
      Vec(pending_.data(), n) -= lr * ConstVec(velocity_.data(), n);
    }
  }
  if (mode_ == WorkerMode::kLocal) {
    StartPush();
    return;
  }
  if (mode_ == WorkerMode::kLocalSgd) {
    ++compute_steps_;
    ++local_done_;
    round_samples_ += step_samples_;
    round_compute_ += step_compute_;
    round_straggle_ += step_straggle_;
    if (local_done_ < LocalSteps()) {
      StartStep();
    } else {
      StartPush();
    }
    return;
  }
  ++pending_steps_;
  pending_samples_ += step_samples_;
  pending_busy_ += step_compute_ + step_straggle_;
  ++compute_steps_;
  MaybeCommPush();
  StartStep();
}

void SimWorker::TakeSamples(int64_t samples) {
  if (!math_.math) return;  // no gradient reads them
  cursor_.Take(samples, &math_.indices);
  for (int64_t& i : math_.indices) i += shard_first_;
}

// ---------------------------------------------------------------- pushes

void SimWorker::Transfer(WorkerThread thread) {
  const double transfer =
      static_cast<double>(
          straggler_.TransferTime(outgoing_.clock, PayloadBytes() - kHeaderBytes).count()) *
      1e-6;
  stats_.comm_s += transfer;
  // As dmlps-worker: a push carries the time its predecessor took to send
  // (the worker times a send only once it is done).
  outgoing_.comm_s = last_comm_s_;
  last_comm_s_ = transfer;
  if (transfer > 0) {
    host_.Wake(rank_, host_.now() + transfer, thread);
  } else {
    OnWake(thread);
  }
}

void SimWorker::SendPush() {
  Message push;
  push.kind = MessageKind::kPush;
  push.worker = rank_;
  // The server times a push's cycle from its reply to the push's arrival:
  // the step and the transfer, which a slow link lengthens at once. Here it
  // is timed at the worker, so the two messages' time on the simulated
  // network, the same for every worker on equal links, is left out.
  outgoing_.cycle_s = host_.now() - replied_at_;
  push.push = outgoing_;
  ++stats_.steps;
  stats_.samples += outgoing_.samples;
  ++clock_;
  if (Lazy()) {
    // The step's samples leave the cursor in push order, and its gradient
    // is what the server will stage.
    TakeSamples(outgoing_.samples);
    math_.pushes.Expect(rank_, model_, math_.indices);
  }
  host_.SendToServer(rank_, PayloadBytes(), std::move(push));
}

void SimWorker::StartPush() {
  const bool local_sgd = mode_ == WorkerMode::kLocalSgd;
  const double compute = local_sgd ? round_compute_ : step_compute_;
  const double busy = compute + (local_sgd ? round_straggle_ : step_straggle_);
  int64_t batch = batch_;
  if (mode_ == WorkerMode::kToken) batch = config_.policy.token_size;
  if (local_sgd) batch = batch_ * LocalSteps();
  outgoing_ = sync::PushInfo{
      .clock = clock_,
      .base_version = version_,
      .samples = local_sgd ? round_samples_ : step_samples_,
      .batch = batch,
      .busy_s = busy,
      .compute_s = compute,
      .run_wait_s = local_sgd ? 0 : std::min(step_run_wait_, compute),
      .cpu = busy > 0 ? compute / busy : 0,
  };
  phase_ = Phase::kTransfer;
  Transfer(WorkerThread::kCompute);
}

void SimWorker::OnTransferDone() {
  SendPush();
  if (mode_ == WorkerMode::kSync || mode_ == WorkerMode::kChunked ||
      mode_ == WorkerMode::kLocalSgd) {
    phase_ = Phase::kAwaitModel;
    Pull();
  } else {
    phase_ = Phase::kAwaitReply;
    wait_start_ = host_.now();
  }
}

void SimWorker::MaybeCommPush() {
  if (comm_ != CommPhase::kIdle || pending_steps_ == 0) return;
  in_flight_.swap(pending_);
  std::fill(pending_.begin(), pending_.end(), 0.f);
  outgoing_ = sync::PushInfo{
      .clock = clock_,
      .base_version = version_,
      .samples = pending_samples_,
      .batch = batch_,
      .busy_s = pending_busy_,
  };
  pending_steps_ = 0;
  pending_samples_ = 0;
  pending_busy_ = 0;
  comm_ = CommPhase::kTransfer;
  Transfer(WorkerThread::kComm);
}

void SimWorker::OnCommTransferDone() {
  comm_ = CommPhase::kAwaitContinue;
  SendPush();
}

}  // namespace dmlps::sim
