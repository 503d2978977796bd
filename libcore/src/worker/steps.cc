#include "worker/steps.h"

#include <Eigen/Core>
#include <algorithm>
#include <chrono>

#include "dmlps/optim/optimizer.h"

namespace dmlps::worker {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::microseconds;
using Vec = Eigen::Map<Eigen::VectorXf>;
using ConstVec = Eigen::Map<const Eigen::VectorXf>;

// A-BSP's step: chunk after chunk into `grad`, looking for SyncNow in
// between; the mean gradient over the samples actually processed is what
// goes out. Cut short, with nothing to push, when the server stops.
Result<StepResult> ComputeInChunks(StepContext& steps, int64_t clock, std::span<const float> params,
                                   std::vector<float>& grad, std::vector<float>& chunk_gradient) {
  ServerLink& link = steps.link();
  const int64_t batch = steps.state().batch;
  StepResult step;
  Vec sum(grad.data(), static_cast<Eigen::Index>(grad.size()));
  sum.setZero();
  double loss_sum = 0;
  while (step.samples < batch) {
    const int64_t n = std::min(link.welcome().chunk, batch - step.samples);
    DMLPS_ASSIGN_OR_RETURN(
        StepResult part,
        steps.computer().Compute(clock, n, params, chunk_gradient, step.samples == 0));
    steps.Count(part);
    sum += static_cast<float>(n) * ConstVec(chunk_gradient.data(), sum.size());
    loss_sum += part.loss * static_cast<double>(n);
    step.samples += n;
    step.compute += part.compute;
    step.straggle += part.straggle;
    step.run_wait += part.run_wait;
    DMLPS_RETURN_IF_ERROR(link.PollControl());
    if (link.stopped()) return step;
    if (link.sync_round() >= clock) break;  // told to stop: the rest waits for the next step
  }
  sum /= static_cast<float>(step.samples);
  step.loss = loss_sum / static_cast<double>(step.samples);
  return step;
}

}  // namespace

Status StepContext::TakeModel(proto::Message& message, std::span<float> params) {
  DMLPS_ASSIGN_OR_RETURN(proto::Model header, link_.TakeModel(message, params));
  if (link_.stopped()) return Status::Ok();
  state_.version = header.version;
  if (header.batch > 0 && header.batch != state_.batch) {
    state_.batch = header.batch;
    if (tracer_) tracer_->Counter("batch", trace::NowMicros(), static_cast<double>(state_.batch));
  }
  state_.token = header.token;
  if (header.local_steps > 0) state_.local_steps = header.local_steps;
  return Status::Ok();
}

Result<bool> StepContext::Download(int64_t clock, std::span<float> params, bool pulled,
                                   int64_t* waited_us) {
  const double waited_before = report_.wait_s;
  const Clock::time_point start = Clock::now();
  const int64_t start_us = trace::NowMicros();
  if (!pulled) DMLPS_RETURN_IF_ERROR(link_.SendPull(clock));
  DMLPS_ASSIGN_OR_RETURN(proto::Message reply, link_.Await({proto::MsgType::kModel}));
  // A streamed model's chunks arrive while this waits.
  if (!link_.stopped()) DMLPS_RETURN_IF_ERROR(TakeModel(reply, params));
  report_.wait_s += std::chrono::duration<double>(Clock::now() - start).count();
  if (waited_us != nullptr) {
    *waited_us = static_cast<int64_t>((report_.wait_s - waited_before) * 1e6);
  }
  if (tracer_)
    tracer_->Span("wait", "pull", start_us, Micros(Clock::now() - start), {{"clock", clock}});
  return !link_.stopped();
}

Status StepContext::Push(proto::Push push, std::shared_ptr<const std::vector<float>> payload,
                         const proto::Body* then) {
  const Clock::time_point start = Clock::now();
  const int64_t start_us = trace::NowMicros();
  // As sent: encoded under a push codec.
  const int64_t bytes = link_.PushWireBytes(payload->size());
  // The link's time goes with the next push, less what this thread waited
  // for a core meanwhile: on a host of more workers than cores a send held
  // back for a core read as a slower link, and auto took a worker next to
  // a neighbour's burst of a few rounds for a straggler.
  const Result<double> wait_before = ReadThreadRunDelay();
  DMLPS_RETURN_IF_ERROR(computer_.EmulateTransfer(push.clock, bytes));
  push.comm_us = state_.comm_us;
  const UsageMeter::Usage usage = state_.usage.Read();
  push.cpu = usage.cpu_cores;
  push.memory_bytes = usage.memory_bytes;
  DMLPS_RETURN_IF_ERROR(link_.SendPush(push, std::move(payload), then));
  const int64_t took_us = Micros(Clock::now() - start);
  const int64_t waited_us = RunDelaySince(wait_before, std::chrono::microseconds(took_us)).count();
  state_.comm_us = took_us - waited_us;
  report_.comm_s += took_us * 1e-6;
  state_.bytes_sent += bytes;
  if (tracer_) {
    tracer_->Span("comm", "push", start_us, took_us,
                  {{"clock", push.clock},
                   {"bytes", bytes},
                   {"run_wait_us", waited_us},
                   {"cpu", push.cpu},
                   {"memory", push.memory_bytes}});
    tracer_->Counter("bytes_sent", start_us + took_us, static_cast<double>(state_.bytes_sent));
  }
  return Status::Ok();
}

proto::Push StepContext::PushFor(int64_t clock, int64_t batch, const StepResult& step,
                                 int64_t wait_us) const {
  proto::Push push;
  push.clock = clock;
  push.base_version = state_.version;
  push.batch = batch;
  push.samples = step.samples;
  push.loss = step.loss;
  push.compute_us = step.compute.count();
  push.straggle_us = step.straggle.count();
  push.run_wait_us = step.run_wait.count();
  push.wait_us = wait_us;
  return push;
}

void StepContext::Count(const StepResult& step) {
  ++report_.steps;
  report_.samples += step.samples;
  report_.compute_s += step.compute.count() * 1e-6;
  report_.straggle_s += step.straggle.count() * 1e-6;
}

void StepContext::CountReplyWait(int64_t clock, int64_t asked_us, int64_t wait_us) {
  report_.wait_s += wait_us * 1e-6;
  if (tracer_) tracer_->Span("wait", "reply", asked_us, wait_us, {{"clock", clock}});
}

void LocalStateStep(std::span<float> params, std::span<float> velocity, std::span<const float> grad,
                    float lr, float mu, int64_t state_begin) {
  const auto begin = static_cast<size_t>(state_begin);
  optim::LocalMomentumStep(params.first(begin), velocity.first(begin), grad.first(begin), lr, mu);
  std::copy(grad.begin() + state_begin, grad.end(), params.begin() + state_begin);
}

Status TakeLocalStep(StepContext& steps, std::span<float> params, std::span<float> velocity,
                     std::span<const float> grad) {
  Computation& computation = *steps.computer().computation();
  if (computation.TakesLocalSteps()) return computation.LocalStep(params, grad);
  const proto::Welcome& welcome = steps.link().welcome();
  LocalStateStep(params, velocity, grad, static_cast<float>(welcome.lr),
                 static_cast<float>(welcome.momentum), StateBegin(welcome));
  return Status::Ok();
}

LocalCopy::LocalCopy(StepComputer& computer)
    : params(static_cast<size_t>(computer.num_params())),
      reference(params.size()),
      grad(params.size()),
      velocity(params.size(), 0.f),
      pushes(computer.computation(), params.size()) {}

Result<StepResult> TrainLocalStep(StepContext& steps, int64_t step, int64_t batch,
                                  LocalCopy& copy) {
  DMLPS_ASSIGN_OR_RETURN(StepResult result,
                         steps.computer().Compute(step, batch, copy.params, copy.grad));
  const Clock::time_point update_start = Clock::now();
  DMLPS_RETURN_IF_ERROR(TakeLocalStep(steps, copy.params, copy.velocity, copy.grad));
  result.compute += microseconds(Micros(Clock::now() - update_start));
  return result;
}

void LocalPush(std::span<const float> minuend, std::span<const float> subtrahend,
               std::span<const float> current, std::span<float> out, int64_t state_begin) {
  const auto n = static_cast<Eigen::Index>(state_begin);
  Vec(out.data(), n) = ConstVec(minuend.data(), n) - ConstVec(subtrahend.data(), n);
  std::copy(current.begin() + state_begin, current.end(), out.begin() + state_begin);
}

Status RunSteps(sync::WorkerMode mode, StepContext& steps) {
  const proto::Welcome& welcome = steps.link().welcome();
  switch (mode) {
    case sync::WorkerMode::kSync:
      return RunSyncSteps(steps, false);
    case sync::WorkerMode::kChunked:
      if (welcome.chunk < 1) return Status::Protocol("chunked steps need a chunk size");
      return RunSyncSteps(steps, true);
    case sync::WorkerMode::kLocal:
      return RunLocalSteps(steps);
    case sync::WorkerMode::kLocalOverlap:
      return RunLocalOverlapSteps(steps);
    case sync::WorkerMode::kToken:
      if (welcome.token_size < 1) return Status::Protocol("token steps need a token size");
      return RunTokenSteps(steps);
    case sync::WorkerMode::kLocalSgd:
      if (welcome.local_steps < 1) return Status::Protocol("local-sgd steps need a step count");
      return RunLocalSgdSteps(steps);
  }
  return Status::Internal("no loop for steps of the kind " +
                          std::string(sync::WorkerModeName(mode)));
}

// Pull, compute one batch (chunked: stop early when told), push the mean
// gradient. The server decides when a pull is answered.
Status RunSyncSteps(StepContext& steps, bool chunked) {
  StepComputer& computer = steps.computer();
  std::vector<float> params(computer.num_params());
  PushBuffers buffers(computer.computation(), params.size());
  std::shared_ptr<std::vector<float>> gradient;
  std::vector<float> chunk_gradient(chunked ? params.size() : 0);
  bool pulled = false;  // the Pull went out with the last push
  for (int64_t clock = 0;; ++clock) {
    int64_t wait_us = 0;
    DMLPS_ASSIGN_OR_RETURN(bool more, steps.Download(clock, params, pulled, &wait_us));
    if (!more) return Status::Ok();
    std::vector<float>& grad = buffers.Take(&gradient);
    StepResult step;
    if (!chunked) {
      DMLPS_ASSIGN_OR_RETURN(step, computer.Compute(clock, steps.state().batch, params, grad));
      steps.Count(step);
    } else {
      DMLPS_ASSIGN_OR_RETURN(step, ComputeInChunks(steps, clock, params, grad, chunk_gradient));
      if (steps.link().stopped()) return Status::Ok();
    }
    const proto::Body pull = proto::Pull{clock + 1};
    DMLPS_RETURN_IF_ERROR(
        steps.Push(steps.PushFor(clock, steps.state().batch, step, wait_us), gradient, &pull));
    pulled = true;
  }
}

// Train the local copy; after every step push its delta since the last
// push, and download the global model when the answer says so.
Status RunLocalSteps(StepContext& steps) {
  LocalCopy copy(steps.computer());
  DMLPS_ASSIGN_OR_RETURN(bool more, steps.Download(0, copy.params));
  if (!more) return Status::Ok();
  copy.reference = copy.params;
  const int64_t state_begin = StateBegin(steps.link().welcome());
  int64_t wait_us = 0;
  for (int64_t clock = 0;; ++clock) {
    const int64_t batch = steps.state().batch;
    DMLPS_ASSIGN_OR_RETURN(StepResult step, TrainLocalStep(steps, clock, batch, copy));
    const Clock::time_point delta_start = Clock::now();
    LocalPush(copy.params, copy.reference, copy.params, copy.pushes.Take(&copy.payload),
              state_begin);
    copy.reference = copy.params;
    step.compute += microseconds(Micros(Clock::now() - delta_start));  // the delta is compute too
    steps.Count(step);

    DMLPS_RETURN_IF_ERROR(steps.Push(steps.PushFor(clock, batch, step, wait_us), copy.payload));
    const Clock::time_point asked = Clock::now();
    const int64_t asked_us = trace::NowMicros();
    DMLPS_ASSIGN_OR_RETURN(proto::Message reply, steps.link().Await({proto::MsgType::kContinue}));
    wait_us = Micros(Clock::now() - asked);
    steps.CountReplyWait(clock, asked_us, wait_us);
    if (steps.link().stopped()) return Status::Ok();
    if (std::get<proto::Continue>(reply.body).download) {
      const double before = steps.report().wait_s;
      DMLPS_ASSIGN_OR_RETURN(more, steps.Download(clock + 1, copy.params));
      if (!more) return Status::Ok();
      wait_us += static_cast<int64_t>((steps.report().wait_s - before) * 1e6);
      copy.reference = copy.params;
    }
  }
}

// Train the token granted, push it, and go on with the next grant; a new
// model arrives with the first token of each iteration.
Status RunTokenSteps(StepContext& steps) {
  StepComputer& computer = steps.computer();
  ServerLink& link = steps.link();
  const int64_t token_size = link.welcome().token_size;
  std::vector<float> params(computer.num_params());
  PushBuffers buffers(computer.computation(), params.size());
  std::shared_ptr<std::vector<float>> gradient;
  DMLPS_ASSIGN_OR_RETURN(bool more, steps.Download(0, params));
  if (!more) return Status::Ok();
  int64_t wait_us = 0;
  // A token is a part of an iteration, the model's version: a straggler
  // profile's delays come with the worker's first token of an iteration
  // (round-robin: the worker of rank t mod N is the straggler of iteration
  // t), as they come once a step under the other policies.
  int64_t straggled_version = -1;
  for (int64_t clock = 0;; ++clock) {
    if (steps.state().token < 0) return Status::Protocol("the server sent no token to train");
    std::vector<float>& grad = buffers.Take(&gradient);
    const int64_t version = steps.state().version;
    const StepComputer::StraggleAt at{version, version != straggled_version};
    straggled_version = version;
    DMLPS_ASSIGN_OR_RETURN(StepResult step, computer.Compute(clock, token_size, params, grad, at));
    steps.Count(step);
    DMLPS_RETURN_IF_ERROR(steps.Push(steps.PushFor(clock, token_size, step, wait_us), gradient));
    // The answer is the next token on this model (Continue), or the new
    // model with a token once the iteration is complete.
    const Clock::time_point asked = Clock::now();
    const int64_t asked_us = trace::NowMicros();
    DMLPS_ASSIGN_OR_RETURN(proto::Message reply,
                           link.Await({proto::MsgType::kContinue, proto::MsgType::kModel}));
    if (link.stopped()) return Status::Ok();
    if (auto* next = std::get_if<proto::Continue>(&reply.body)) {
      steps.state().token = next->token;
    } else {
      DMLPS_RETURN_IF_ERROR(steps.TakeModel(reply, params));
      if (link.stopped()) return Status::Ok();
    }
    wait_us = Micros(Clock::now() - asked);
    steps.CountReplyWait(clock, asked_us, wait_us);
  }
}

}  // namespace dmlps::worker
