#include "sim/worker.h"

#include <algorithm>

#include "dmlps/base/flush_denormals.h"
#include "dmlps/optim/optimizer.h"
#include "dmlps/server/server.h"

namespace dmlps::sim {
namespace {

using sync::WorkerMode;
using Vec = Eigen::Map<Eigen::VectorXf>;
using ConstVec = Eigen::Map<const Eigen::VectorXf>;

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

void StepMath::TakeSamples(worker::EpochCursor& cursor, int64_t first, int64_t samples) {
  if (!math) return;  // no gradient reads them
  cursor.Take(samples, &indices);
  for (int64_t& i : indices) i += first;
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
      timing_(config, rank),
      batch_(config.job.batch) {}

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

void SimWorker::AddPush(Samples /*samples*/, float weight, std::span<float> acc) {
  if (config_.push_codec.kind == compress::Kind::kNone || !math_.math) {
    AddPayload(weight, acc);
  } else {
    AddEncodedPush(weight, acc);
  }
}

void SimWorker::AddEncodedPush(float weight, std::span<float> acc) {
  if (slice_bounds_.empty()) {
    slice_bounds_ = server::ShardBounds(num_params_, config_.shards);
    feedback_.resize(slice_bounds_.size() - 1);
  }
  math_.payload.assign(static_cast<size_t>(num_params_), 0.f);
  AddPayload(1.f, math_.payload);
  for (size_t k = 0; k < feedback_.size(); ++k) {
    const auto first = static_cast<size_t>(slice_bounds_[k]);
    const auto size = static_cast<size_t>(slice_bounds_[k + 1]) - first;
    Status s = feedback_[k].Encode(config_.push_codec,
                                   std::span<const float>(math_.payload).subspan(first, size),
                                   &math_.encoded);
    if (s.ok())
      s = compress::DecodeAdd(config_.push_codec, math_.encoded, weight, acc.subspan(first, size));
    if (!s.ok()) {
      // As a codec refuses it on a real worker: the run cannot go on.
      host_.Fail("worker " + std::to_string(rank_) + "'s push: " + s.message());
      return;
    }
  }
}

void SimWorker::AddPayload(float weight, std::span<float> acc_span) {
  const auto n = static_cast<Eigen::Index>(num_params_);
  Vec acc(acc_span.data(), n);
  switch (mode_) {
    case WorkerMode::kSync:
    case WorkerMode::kChunked:
    case WorkerMode::kToken:
      // The mean gradient over the samples the step took, on the model the
      // step ran on: what the worker would have sent (SendPush expected it).
      acc += weight * ConstVec(math_.pushes.Take(rank_).data(), n);
      break;
    case WorkerMode::kLocal:
      // The step's delta, params_after - params_before = -lr * velocity.
      acc -= (weight * static_cast<float>(config_.job.lr)) * ConstVec(velocity_.data(), n);
      break;
    case WorkerMode::kLocalOverlap:
      acc += weight * ConstVec(handover_.in_flight().data(), n);
      break;
    case WorkerMode::kLocalSgd:
      // The pseudo-gradient θ_start − θ_local of the H local steps.
      round_.AddPseudoGradient(params_, weight, acc_span);
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
      round_.Begin(params_);
      if (velocity_.empty()) velocity_.assign(n, 0.f);
      StartStep();
      break;
    case WorkerMode::kLocalOverlap:
      if (download) {
        // The communication thread hands it to the compute loop, which
        // adopts it when its current step ends.
        handover_.Download(std::move(message.model));
        comm_ = CommPhase::kIdle;
        MaybeCommPush();
      } else {
        params_ = *message.model;
        velocity_.assign(n, 0.f);
        handover_.Reset(n);
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

void SimWorker::StartStep() {
  if (mode_ == WorkerMode::kLocalOverlap) handover_.AdoptDownload(params_);
  if (mode_ == WorkerMode::kToken && token_ < 0) {
    FailInternal("got no token to train");
    return;
  }
  const bool counts_local = mode_ == WorkerMode::kLocalOverlap || mode_ == WorkerMode::kLocalSgd;
  // Tokens are parts of an iteration, the model's version (as worker/steps.cc).
  timing_.Begin(counts_local ? compute_steps_ : mode_ == WorkerMode::kToken ? version_ : clock_);
  StartChunk();
}

void SimWorker::StartChunk() {
  int64_t samples = batch_;
  if (mode_ == WorkerMode::kChunked) {
    samples = std::min(config_.policy.chunk, batch_ - timing_.times().samples);
  } else if (mode_ == WorkerMode::kToken) {
    samples = config_.policy.token_size;
  }
  phase_ = Phase::kCompute;
  const StepTiming::Job job = timing_.StartCompute(samples, host_.now());
  host_.StartJob(rank_, job.work, job.shared_speed);
}

void SimWorker::OnComputeDone() {
  const double now = host_.now();
  const StepTiming::Computed job = timing_.EndCompute(now, mode_ == WorkerMode::kToken);
  stats_.compute_s += job.compute_s;
  stats_.straggle_s += job.straggle_s;
  phase_ = Phase::kStraggle;
  if (job.straggle_s > 0) {
    host_.Wake(rank_, now + job.straggle_s, WorkerThread::kCompute);
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
      if (timing_.times().samples >= batch_ || sync_round_ >= clock_) {
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
      if (mode_ == WorkerMode::kLocalSgd) passes = round_.done() + 1 < LocalSteps() ? 2 : 4;
      phase_ = Phase::kUpdate;
      timing_.StartUpdate(host_.now());
      host_.StartJob(rank_, passes * static_cast<double>(num_params_) * config_.cost.param_s, 1);
      break;
    }
  }
}

void SimWorker::OnUpdateDone() {
  stats_.compute_s += timing_.EndUpdate(host_.now());
  // The step's math: its gradient on the local model, then the local step.
  math_.TakeSamples(cursor_, shard_first_, timing_.times().samples);
  math_.LocalGradient(params_);
  const auto lr = static_cast<float>(config_.job.lr);
  {
    const FlushDenormals flush;
    optim::LocalMomentumStep(params_, velocity_, math_.grad, lr,
                             static_cast<float>(config_.job.momentum));
    // Overlap: the step moved the model by -lr * velocity; hand it over.
    if (mode_ == WorkerMode::kLocalOverlap) handover_.AddStep(velocity_, lr, timing_.times());
  }
  if (mode_ == WorkerMode::kLocal) {
    StartPush();
    return;
  }
  ++compute_steps_;
  if (mode_ == WorkerMode::kLocalSgd) {
    round_.Add(timing_.times());
    if (round_.done() < LocalSteps()) {
      StartStep();
    } else {
      StartPush();
    }
    return;
  }
  MaybeCommPush();
  StartStep();
}

// ---------------------------------------------------------------- pushes

void SimWorker::Transfer(WorkerThread thread) {
  const double transfer = timing_.TransferSeconds(outgoing_.clock, PayloadBytes() - kHeaderBytes);
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
    math_.TakeSamples(cursor_, shard_first_, outgoing_.samples);
    math_.pushes.Expect(rank_, model_, math_.indices);
  }
  host_.SendToServer(rank_, PayloadBytes(), std::move(push));
}

void SimWorker::StartPush() {
  const bool local_sgd = mode_ == WorkerMode::kLocalSgd;
  const StepTimes& times = local_sgd ? round_.times() : timing_.times();
  const double compute = times.compute;
  const double busy = compute + times.straggle;
  int64_t batch = batch_;
  if (mode_ == WorkerMode::kToken) batch = config_.policy.token_size;
  if (local_sgd) batch = batch_ * LocalSteps();
  outgoing_ = sync::PushInfo{
      .clock = clock_,
      .base_version = version_,
      .samples = times.samples,
      .batch = batch,
      .busy_s = busy,
      .compute_s = compute,
      .run_wait_s = local_sgd ? 0 : std::min(times.run_wait, compute),
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
  if (comm_ != CommPhase::kIdle || !handover_.HasPending()) return;
  outgoing_ = handover_.TakePending(clock_, version_, batch_);
  comm_ = CommPhase::kTransfer;
  Transfer(WorkerThread::kComm);
}

void SimWorker::OnCommTransferDone() {
  comm_ = CommPhase::kAwaitContinue;
  SendPush();
}

}  // namespace dmlps::sim
