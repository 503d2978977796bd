// WBSP with overlap: a compute thread that never touches the network and a
// communication thread (the caller's) that pushes whatever deltas are ready
// and downloads when told. On download the local model becomes the
// downloaded one plus the local steps not yet handed over for pushing.
#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

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
        buffers_(steps.computer().backend(), n_) {}

  Status Run();

 private:
  // The compute thread: local steps from `params` on, their deltas summed
  // into pending_, until done_.
  void ComputeSteps(std::vector<float> params);
  // The communication thread: pushes what pending_ holds, downloads when
  // the answer says so.
  Status Communicate();
  // The push that hands over the steps pending_ holds, its delta in `delta`;
  // pending_ starts anew. REQUIRES: mutex_ held.
  proto::Push HandOver(std::vector<float>& delta);

  StepContext& steps_;
  const size_t n_;
  PushBuffers buffers_;  // outlives the compute thread, which uses the backend too

  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<float> pending_;  // sum of local step deltas not yet handed over
  int64_t pending_steps_ = 0;
  int64_t pending_samples_ = 0;
  double pending_loss_ = 0;
  int64_t pending_compute_us_ = 0;
  int64_t pending_straggle_us_ = 0;
  std::vector<float> downloaded_;  // a model for the compute thread to adopt
  bool has_download_ = false;
  bool done_ = false;
  Status compute_status_;
};

Status OverlapSteps::Run() {
  std::vector<float> params(n_);
  DMLPS_ASSIGN_OR_RETURN(bool more, steps_.Download(0, params));
  if (!more) return Status::Ok();
  pending_.assign(n_, 0.f);
  std::thread compute([this, params]() mutable { ComputeSteps(std::move(params)); });
  Status status = Communicate();
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  compute.join();
  if (!compute_status_.ok() && status.ok()) status = compute_status_;
  return status;
}

void OverlapSteps::ComputeSteps(std::vector<float> params) {
  std::vector<float> grad(n_), velocity(n_, 0.f);
  const auto lr = static_cast<float>(steps_.link().welcome().lr);
  const auto mu = static_cast<float>(steps_.link().welcome().momentum);
  const auto size = static_cast<Eigen::Index>(n_);
  for (int64_t step_no = 0;; ++step_no) {
    {
      std::lock_guard lock(mutex_);
      if (done_) return;
      if (has_download_) {
        // θ_local = θ_downloaded + the deltas computed since the last hand-over.
        Vec(params.data(), size) = ConstVec(downloaded_.data(), size) +
                                   ConstVec(pending_.data(), size);
        has_download_ = false;
      }
    }
    Result<StepResult> step =
        steps_.computer().Compute(step_no, steps_.state().batch, params, grad);
    if (!step.ok()) {
      std::lock_guard lock(mutex_);
      compute_status_ = step.status();
      done_ = true;
      ready_.notify_all();
      return;
    }
    const Clock::time_point update_start = Clock::now();
    optim::LocalMomentumStep(params, velocity, grad, lr, mu);
    std::lock_guard lock(mutex_);
    // The step moved the model by -lr * velocity.
    Vec(pending_.data(), size) -= lr * ConstVec(velocity.data(), size);
    step->compute += std::chrono::microseconds(Micros(Clock::now() - update_start));
    ++pending_steps_;
    pending_samples_ += step->samples;
    pending_loss_ += step->loss * static_cast<double>(step->samples);
    pending_compute_us_ += step->compute.count();
    pending_straggle_us_ += step->straggle.count();
    steps_.Count(*step);
    ready_.notify_all();
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
    {
      std::unique_lock lock(mutex_);
      // Wake regularly to keep an eye on signals and the server.
      ready_.wait_for(lock, kPollSlice, [&] { return done_ || pending_steps_ > 0; });
      if (done_) return Status::Ok();
      if (pending_steps_ == 0) {
        lock.unlock();
        DMLPS_RETURN_IF_ERROR(link.PollControl());
        if (link.stopped() || link.Interrupted()) return Status::Ok();
        continue;
      }
      push = HandOver(buffers_.Take(&delta));
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
      std::lock_guard lock(mutex_);
      downloaded_ = model;
      has_download_ = true;
    }
  }
}

}  // namespace

Status RunLocalOverlapSteps(StepContext& steps) {
  OverlapSteps overlap(steps);
  return overlap.Run();
}

}  // namespace dmlps::worker
