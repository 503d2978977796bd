// WBSP with overlap: a compute thread that never touches the network and a
// communication thread (the caller's) that pushes whatever deltas are ready
// and downloads when told. On download the local model becomes the
// downloaded one plus the local steps not yet handed over for pushing.
// What the two threads share lies under one mutex, the batch size among it:
// StepState belongs to the communication thread, which passes the batch each
// download sets on to the compute thread along with the model.
#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <thread>

#include "dmlps/base/flush_denormals.h"
#include "dmlps/base/mutex.h"
#include "dmlps/optim/optimizer.h"
#include "worker/steps.h"

namespace dmlps::worker {
namespace {

using Clock = std::chrono::steady_clock;
using Vec = Eigen::Map<Eigen::VectorXf>;
using ConstVec = Eigen::Map<const Eigen::VectorXf>;

class OverlapSteps {
 public:
  explicit OverlapSteps(StepContext& steps)
      : steps_(steps),
        n_(static_cast<size_t>(steps.computer().num_params())),
        buffers_(steps.computer().computation(), n_) {}

  Status Run();

 private:
  // The compute thread: local steps from `params` on, their deltas summed
  // into pending_, until done_. It reads nothing of StepState, which the
  // communication thread updates.
  void ComputeSteps(std::vector<float> params) EXCLUDES(mutex_);
  // The communication thread: pushes what pending_ holds, downloads when
  // the answer says so.
  Status Communicate() EXCLUDES(mutex_);
  // The push that hands over the steps pending_ holds, its delta in `delta`;
  // pending_ starts anew.
  proto::Push HandOver(std::vector<float>& delta) REQUIRES(mutex_);

  StepContext& steps_;
  const size_t n_;
  PushBuffers buffers_;  // outlives the compute thread, which uses the computation too

  Mutex mutex_;
  CondVar ready_;  // a step is pending, or the compute thread is done
  // Sum of local step deltas not yet handed over.
  std::vector<float> pending_ GUARDED_BY(mutex_);
  int64_t pending_steps_ GUARDED_BY(mutex_) = 0;
  int64_t pending_samples_ GUARDED_BY(mutex_) = 0;
  double pending_loss_ GUARDED_BY(mutex_) = 0;
  int64_t pending_compute_us_ GUARDED_BY(mutex_) = 0;
  int64_t pending_straggle_us_ GUARDED_BY(mutex_) = 0;
  // A model for the compute thread to adopt, and the batch size it came with.
  std::vector<float> downloaded_ GUARDED_BY(mutex_);
  bool has_download_ GUARDED_BY(mutex_) = false;
  int64_t batch_ GUARDED_BY(mutex_) = 0;  // samples per local step, as last downloaded
  bool done_ GUARDED_BY(mutex_) = false;
  Status compute_status_ GUARDED_BY(mutex_);
};

Status OverlapSteps::Run() {
  std::vector<float> params(n_);
  DMLPS_ASSIGN_OR_RETURN(bool more, steps_.Download(0, params));
  if (!more) return Status::Ok();
  {
    MutexLock lock(&mutex_);
    pending_.assign(n_, 0.f);
    batch_ = steps_.state().batch;
  }
  std::thread compute([this, params]() mutable { ComputeSteps(std::move(params)); });
  Status status = Communicate();
  {
    MutexLock lock(&mutex_);
    done_ = true;
  }
  compute.join();
  MutexLock lock(&mutex_);
  if (!compute_status_.ok() && status.ok()) status = compute_status_;
  return status;
}

void OverlapSteps::ComputeSteps(std::vector<float> params) {
  std::vector<float> grad(n_), velocity(n_, 0.f);
  const auto lr = static_cast<float>(steps_.link().welcome().lr);
  const auto mu = static_cast<float>(steps_.link().welcome().momentum);
  const auto size = static_cast<Eigen::Index>(n_);
  for (int64_t step_no = 0;; ++step_no) {
    int64_t batch = 0;
    {
      MutexLock lock(&mutex_);
      if (done_) return;
      if (has_download_) {
        // θ_local = θ_downloaded + the deltas computed since the last hand-over.
        Vec(params.data(), size) =
            ConstVec(downloaded_.data(), size) + ConstVec(pending_.data(), size);
        has_download_ = false;
      }
      batch = batch_;
    }
    Result<StepResult> step = steps_.computer().Compute(step_no, batch, params, grad);
    if (!step.ok()) {
      MutexLock lock(&mutex_);
      compute_status_ = step.status();
      done_ = true;
      ready_.SignalAll();
      return;
    }
    const Clock::time_point update_start = Clock::now();
    optim::LocalMomentumStep(params, velocity, grad, lr, mu);
    MutexLock lock(&mutex_);
    // The step moved the model by -lr * velocity.
    {
      const FlushDenormals flush;  // lr times a tiny velocity would be denormal
      Vec(pending_.data(), size) -= lr * ConstVec(velocity.data(), size);
    }
    step->compute += std::chrono::microseconds(Micros(Clock::now() - update_start));
    ++pending_steps_;
    pending_samples_ += step->samples;
    pending_loss_ += step->loss * static_cast<double>(step->samples);
    pending_compute_us_ += step->compute.count();
    pending_straggle_us_ += step->straggle.count();
    steps_.Count(*step);
    ready_.SignalAll();
  }
}

proto::Push OverlapSteps::HandOver(std::vector<float>& delta) {
  proto::Push push;
  // Copied, not swapped: the buffer keeps its (perhaps page-locked) storage.
  std::copy(pending_.begin(), pending_.end(), delta.begin());
  std::fill(pending_.begin(), pending_.end(), 0.f);
  push.samples = pending_samples_;
  push.loss = pending_loss_ / static_cast<double>(std::max<int64_t>(1, pending_samples_));
  push.compute_us = pending_compute_us_;
  push.straggle_us = pending_straggle_us_;
  pending_steps_ = pending_samples_ = 0;
  pending_loss_ = 0;
  pending_compute_us_ = pending_straggle_us_ = 0;
  return push;
}

Status OverlapSteps::Communicate() {
  ServerLink& link = steps_.link();
  std::shared_ptr<std::vector<float>> delta;
  std::vector<float> model(n_);
  for (int64_t clock = 0;;) {
    proto::Push push;
    bool pending = false;
    {
      MutexLock lock(&mutex_);
      // Wake regularly to keep an eye on signals and the server.
      const Clock::time_point deadline = Clock::now() + kPollSlice;
      while (!done_ && pending_steps_ == 0 && ready_.WaitUntil(&mutex_, deadline)) {
      }
      if (done_) return Status::Ok();
      pending = pending_steps_ > 0;
      if (pending) push = HandOver(buffers_.Take(&delta));
    }
    if (!pending) {
      DMLPS_RETURN_IF_ERROR(link.PollControl());
      if (link.stopped() || link.Interrupted()) return Status::Ok();
      continue;
    }
    push.clock = clock++;
    push.base_version = steps_.state().version;
    push.batch = steps_.state().batch;
    DMLPS_RETURN_IF_ERROR(steps_.Push(push, delta));
    DMLPS_ASSIGN_OR_RETURN(proto::Message reply, link.Await({proto::MsgType::kContinue}));
    if (link.stopped()) return Status::Ok();
    if (std::get<proto::Continue>(reply.body).download) {
      DMLPS_ASSIGN_OR_RETURN(bool more, steps_.Download(clock, model));
      if (!more) return Status::Ok();
      MutexLock lock(&mutex_);
      downloaded_ = model;
      has_download_ = true;
      batch_ = steps_.state().batch;
    }
  }
}

}  // namespace

Status RunLocalOverlapSteps(StepContext& steps) {
  if (steps.computer().computation()->TakesLocalSteps()) {
    return Status::InvalidArgument(
        "wbsp-overlap steps the local copy with the worker's own SGD on a thread of its own; a "
        "computation with its own local optimizer needs wbsp, localsgd or async-localsgd");
  }
  OverlapSteps overlap(steps);
  return overlap.Run();
}

}  // namespace dmlps::worker
