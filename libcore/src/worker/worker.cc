#include "dmlps/worker/worker.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <Eigen/Core>
#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "dmlps/data/dataset.h"
#include "dmlps/model/backend.h"
#include "dmlps/model/model.h"
#include "dmlps/optim/optimizer.h"
#include "dmlps/proto/codec.h"
#include "dmlps/trace/trace.h"
#include "worker/compute.h"
#include "worker/link.h"

namespace dmlps::worker {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using Vec = Eigen::Map<Eigen::VectorXf>;
using ConstVec = Eigen::Map<const Eigen::VectorXf>;

Status CheckReadable(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return Status::NotFound(path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return Status::NotFound(path + ": not a regular file");
  return Status::Ok();
}

class WorkerRunner {
 public:
  WorkerRunner(const WorkerConfig& config, const std::atomic<int>* signal)
      : config_(config), signal_(signal), link_(config, signal) {}

  Result<WorkerReport> Run();

 private:
  Status Prepare();
  Status Setup();
  Status Train();
  // Runs the steps of the policy's mode until the server stops the worker.
  Status RunMode();
  // Joins the server again after it went away (see ServerLink::Rejoin).
  Status Reconnect();

  // The loops, one per sync::WorkerMode.
  Status RunSync(bool chunked);
  Status RunLocal();
  Status RunLocalOverlap();
  Status RunToken();

  // Sends Pull (unless `pulled`: sent with the push) and waits for the model
  // or Stop; copies the model into params.
  Result<bool> Download(int64_t clock, std::span<float> params, bool pulled = false);
  // Copies a Model message's payload into params and notes its version, batch, token.
  Status TakeModel(proto::Message& message, std::span<float> params);
  // Sends a push and its payload, after the emulated transfer time.
  // `then`, when given, goes right after the push's header, before its
  // chunks: the next Pull, so that a large model streams back while the
  // gradient is still arriving.
  Status SendPush(proto::Push push, std::shared_ptr<const std::vector<float>> payload,
                  const proto::Body* then = nullptr);
  // The push that reports `step`, the worker's step number `clock`, on the
  // model last received, after waiting `wait_us` for the server.
  proto::Push PushFor(int64_t clock, int64_t batch, const StepResult& step, int64_t wait_us) const;
  void Count(const StepResult& step);

  const WorkerConfig& config_;
  const std::atomic<int>* signal_;
  ServerLink link_;
  data::DataSpec data_spec_;
  model::Device device_;
  int64_t max_batch_ = 0;                   // sent with Hello
  std::optional<model::ModelSpec> sized_for_;  // the model --max-batch auto was derived for
  std::unique_ptr<trace::TraceWriter> tracer_;  // null without --trace
  std::unique_ptr<StepComputer> computer_;

  int64_t version_ = 0;       // of the model last received
  int64_t batch_ = 0;         // samples per step, as the server last set it
  int64_t token_ = -1;        // token granted with the last reply
  int64_t comm_us_ = 0;       // time the last send took, reported with the next push
  int64_t bytes_sent_ = 0;    // payload bytes pushed so far
  UsageMeter usage_;
  WorkerReport report_;
};

proto::Push WorkerRunner::PushFor(int64_t clock, int64_t batch, const StepResult& step,
                                  int64_t wait_us) const {
  proto::Push push;
  push.clock = clock;
  push.base_version = version_;
  push.batch = batch;
  push.samples = step.samples;
  push.loss = step.loss;
  push.compute_us = step.compute.count();
  push.straggle_us = step.straggle.count();
  push.wait_us = wait_us;
  return push;
}

Status WorkerRunner::TakeModel(proto::Message& message, std::span<float> params) {
  DMLPS_ASSIGN_OR_RETURN(proto::Model header, link_.TakeModel(message, params));
  if (link_.stopped()) return Status::Ok();
  version_ = header.version;
  if (header.batch > 0 && header.batch != batch_) {
    batch_ = header.batch;
    if (tracer_) tracer_->Counter("batch", trace::NowMicros(), static_cast<double>(batch_));
  }
  token_ = header.token;
  return Status::Ok();
}

Result<bool> WorkerRunner::Download(int64_t clock, std::span<float> params, bool pulled) {
  const Clock::time_point start = Clock::now();
  const int64_t start_us = trace::NowMicros();
  if (!pulled) DMLPS_RETURN_IF_ERROR(link_.SendPull(clock));
  DMLPS_ASSIGN_OR_RETURN(proto::Message reply, link_.Await({proto::MsgType::kModel}));
  // A streamed model's chunks arrive while this waits.
  if (!link_.stopped()) DMLPS_RETURN_IF_ERROR(TakeModel(reply, params));
  report_.wait_s += std::chrono::duration<double>(Clock::now() - start).count();
  if (tracer_) tracer_->Span("wait", "pull", start_us, Micros(Clock::now() - start), {{"clock", clock}});
  return !link_.stopped();
}

Status WorkerRunner::SendPush(proto::Push push, std::shared_ptr<const std::vector<float>> payload,
                              const proto::Body* then) {
  const Clock::time_point start = Clock::now();
  const int64_t start_us = trace::NowMicros();
  const int64_t bytes = static_cast<int64_t>(payload->size() * sizeof(float));
  DMLPS_RETURN_IF_ERROR(computer_->EmulateTransfer(push.clock, bytes));
  push.comm_us = comm_us_;
  const UsageMeter::Usage usage = usage_.Read();
  push.cpu = usage.cpu_cores;
  push.memory_bytes = usage.memory_bytes;
  DMLPS_RETURN_IF_ERROR(link_.SendPush(push, std::move(payload), then));
  comm_us_ = Micros(Clock::now() - start);
  report_.comm_s += comm_us_ * 1e-6;
  bytes_sent_ += bytes;
  if (tracer_) {
    tracer_->Span("comm", "push", start_us, comm_us_,
                  {{"clock", push.clock}, {"bytes", bytes}, {"cpu", push.cpu},
                   {"memory", push.memory_bytes}});
    tracer_->Counter("bytes_sent", start_us + comm_us_, static_cast<double>(bytes_sent_));
  }
  return Status::Ok();
}

void WorkerRunner::Count(const StepResult& step) {
  ++report_.steps;
  report_.samples += step.samples;
  report_.compute_s += step.compute.count() * 1e-6;
  report_.straggle_s += step.straggle.count() * 1e-6;
}

// Bulk-synchronous family: pull, compute one batch (chunked: stop early when
// told), push the mean gradient. The server decides when a pull is answered.
Status WorkerRunner::RunSync(bool chunked) {
  std::vector<float> params(computer_->num_params());
  PushBuffers buffers(computer_->backend(), params.size());
  std::shared_ptr<std::vector<float>> gradient;
  std::vector<float> chunk_gradient(chunked ? params.size() : 0);
  bool pulled = false;  // the Pull went out with the last push
  for (int64_t clock = 0;; ++clock) {
    const double waited_before = report_.wait_s;
    DMLPS_ASSIGN_OR_RETURN(bool more, Download(clock, params, pulled));
    if (!more) return Status::Ok();
    const int64_t wait_us = static_cast<int64_t>((report_.wait_s - waited_before) * 1e6);
    std::vector<float>& grad = buffers.Take(&gradient);
    StepResult step;
    if (!chunked) {
      DMLPS_ASSIGN_OR_RETURN(step, computer_->Compute(clock, batch_, params, grad));
      Count(step);
    } else {
      // A-BSP: chunk after chunk, looking for SyncNow in between; the mean
      // gradient over the samples actually processed is what goes out.
      Vec sum(grad.data(), static_cast<Eigen::Index>(grad.size()));
      sum.setZero();
      double loss_sum = 0;
      while (step.samples < batch_) {
        const int64_t n = std::min(link_.welcome().chunk, batch_ - step.samples);
        DMLPS_ASSIGN_OR_RETURN(StepResult part,
                               computer_->Compute(clock, n, params, chunk_gradient, step.samples == 0));
        Count(part);
        sum += static_cast<float>(n) * ConstVec(chunk_gradient.data(), sum.size());
        loss_sum += part.loss * static_cast<double>(n);
        step.samples += n;
        step.compute += part.compute;
        step.straggle += part.straggle;
        DMLPS_RETURN_IF_ERROR(link_.PollControl());
        if (link_.stopped()) return Status::Ok();
        if (link_.sync_round() >= clock) break;  // told to stop: the rest waits for the next step
      }
      sum /= static_cast<float>(step.samples);
      step.loss = loss_sum / static_cast<double>(step.samples);
    }
    const proto::Body pull = proto::Pull{clock + 1};
    DMLPS_RETURN_IF_ERROR(SendPush(PushFor(clock, batch_, step, wait_us), gradient, &pull));
    pulled = true;
  }
}

// WBSP: train the local copy; after every step push its delta since the last
// push, and download the global model when the answer says so.
Status WorkerRunner::RunLocal() {
  const size_t n = static_cast<size_t>(computer_->num_params());
  std::vector<float> params(n), base(n), grad(n), velocity(n, 0.f);
  PushBuffers buffers(computer_->backend(), n);
  std::shared_ptr<std::vector<float>> delta;
  DMLPS_ASSIGN_OR_RETURN(bool more, Download(0, params));
  if (!more) return Status::Ok();
  base = params;
  const auto lr = static_cast<float>(link_.welcome().lr);
  const auto mu = static_cast<float>(link_.welcome().momentum);
  int64_t wait_us = 0;
  for (int64_t clock = 0;; ++clock) {
    DMLPS_ASSIGN_OR_RETURN(StepResult step, computer_->Compute(clock, batch_, params, grad));
    const Clock::time_point update_start = Clock::now();
    optim::LocalMomentumStep(params, velocity, grad, lr, mu);
    std::vector<float>& d = buffers.Take(&delta);
    const auto size = static_cast<Eigen::Index>(n);
    Vec(d.data(), size) = ConstVec(params.data(), size) - ConstVec(base.data(), size);
    base = params;
    step.compute += microseconds(Micros(Clock::now() - update_start));  // the local update is compute too
    Count(step);

    DMLPS_RETURN_IF_ERROR(SendPush(PushFor(clock, batch_, step, wait_us), delta));
    const Clock::time_point asked = Clock::now();
    const int64_t asked_us = trace::NowMicros();
    DMLPS_ASSIGN_OR_RETURN(proto::Message reply, link_.Await({proto::MsgType::kContinue}));
    wait_us = Micros(Clock::now() - asked);
    report_.wait_s += wait_us * 1e-6;
    if (tracer_) tracer_->Span("wait", "reply", asked_us, wait_us, {{"clock", clock}});
    if (link_.stopped()) return Status::Ok();
    if (std::get<proto::Continue>(reply.body).download) {
      const double before = report_.wait_s;
      DMLPS_ASSIGN_OR_RETURN(more, Download(clock + 1, params));
      if (!more) return Status::Ok();
      wait_us += static_cast<int64_t>((report_.wait_s - before) * 1e6);
      base = params;
    }
  }
}

// WBSP with overlap: a compute thread that never touches the network and a
// communication thread (this one) that pushes whatever deltas are ready and
// downloads when told. On download the local model becomes the downloaded
// one plus the local steps not yet handed over for pushing.
Status WorkerRunner::RunLocalOverlap() {
  const size_t n = static_cast<size_t>(computer_->num_params());
  std::vector<float> params(n);
  DMLPS_ASSIGN_OR_RETURN(bool more, Download(0, params));
  if (!more) return Status::Ok();

  struct Shared {
    std::mutex mutex;
    std::condition_variable ready;
    std::vector<float> pending;        // sum of local step deltas not yet handed over
    int64_t pending_steps = 0;
    int64_t pending_samples = 0;
    double pending_loss = 0;
    int64_t pending_compute_us = 0;
    int64_t pending_straggle_us = 0;
    std::vector<float> downloaded;     // a model for the compute thread to adopt
    bool has_download = false;
    int64_t download_version = 0;
    bool done = false;
    Status compute_status;
  } shared;
  shared.pending.assign(n, 0.f);
  const int64_t start_version = version_;

  std::thread compute([&, params]() mutable {
    std::vector<float> grad(n), velocity(n, 0.f);
    const auto lr = static_cast<float>(link_.welcome().lr);
    const auto mu = static_cast<float>(link_.welcome().momentum);
    for (int64_t step_no = 0;; ++step_no) {
      {
        std::lock_guard lock(shared.mutex);
        if (shared.done) return;
        if (shared.has_download) {
          // θ_local = θ_downloaded + the deltas computed since the last hand-over.
          Vec(params.data(), static_cast<Eigen::Index>(n)) =
              ConstVec(shared.downloaded.data(), static_cast<Eigen::Index>(n)) +
              ConstVec(shared.pending.data(), static_cast<Eigen::Index>(n));
          shared.has_download = false;
        }
      }
      Result<StepResult> step = computer_->Compute(step_no, batch_, params, grad);
      if (!step.ok()) {
        std::lock_guard lock(shared.mutex);
        shared.compute_status = step.status();
        shared.done = true;
        shared.ready.notify_all();
        return;
      }
      const Clock::time_point update_start = Clock::now();
      optim::LocalMomentumStep(params, velocity, grad, lr, mu);
      const auto size = static_cast<Eigen::Index>(n);
      std::lock_guard lock(shared.mutex);
      // The step moved the model by -lr * velocity.
      Vec(shared.pending.data(), size) -= lr * ConstVec(velocity.data(), size);
      step->compute += microseconds(Micros(Clock::now() - update_start));
      ++shared.pending_steps;
      shared.pending_samples += step->samples;
      shared.pending_loss += step->loss * static_cast<double>(step->samples);
      shared.pending_compute_us += step->compute.count();
      shared.pending_straggle_us += step->straggle.count();
      ++report_.steps;
      report_.samples += step->samples;
      report_.compute_s += step->compute.count() * 1e-6;
      report_.straggle_s += step->straggle.count() * 1e-6;
      shared.ready.notify_all();
    }
  });

  Status status;
  PushBuffers buffers(computer_->backend(), n);
  std::shared_ptr<std::vector<float>> delta;
  std::vector<float> model(n);
  version_ = start_version;
  for (int64_t clock = 0; status.ok();) {
    proto::Push push;
    {
      std::unique_lock lock(shared.mutex);
      // Wake regularly to keep an eye on signals and the server.
      shared.ready.wait_for(lock, kPollSlice,
                            [&] { return shared.done || shared.pending_steps > 0; });
      if (shared.done) break;
      if (shared.pending_steps == 0) {
        lock.unlock();
        status = link_.PollControl();
        if (link_.stopped() || link_.Interrupted()) break;
        continue;
      }
      // Copied, not swapped: the buffer keeps its (perhaps page-locked) storage.
      std::vector<float>& d = buffers.Take(&delta);
      std::copy(shared.pending.begin(), shared.pending.end(), d.begin());
      std::fill(shared.pending.begin(), shared.pending.end(), 0.f);
      push.samples = shared.pending_samples;
      push.loss = shared.pending_loss / static_cast<double>(std::max<int64_t>(1, shared.pending_samples));
      push.compute_us = shared.pending_compute_us;
      push.straggle_us = shared.pending_straggle_us;
      shared.pending_steps = shared.pending_samples = 0;
      shared.pending_loss = 0;
      shared.pending_compute_us = shared.pending_straggle_us = 0;
    }
    push.clock = clock++;
    push.base_version = version_;
    push.batch = batch_;
    status = SendPush(push, delta);
    if (!status.ok()) break;
    Result<proto::Message> reply = link_.Await({proto::MsgType::kContinue});
    if (!reply.ok()) {
      status = reply.status();
      break;
    }
    if (link_.stopped()) break;
    if (std::get<proto::Continue>(reply->body).download) {
      Result<bool> got = Download(clock, model);
      if (!got.ok()) status = got.status();
      if (!got.ok() || !*got) break;
      std::lock_guard lock(shared.mutex);
      shared.downloaded = model;
      shared.has_download = true;
    }
  }
  {
    std::lock_guard lock(shared.mutex);
    shared.done = true;
  }
  compute.join();
  if (!shared.compute_status.ok() && status.ok()) status = shared.compute_status;
  return status;
}

// Fela's tokens: train the token granted, push it, and go on with the next
// grant; a new model arrives with the first token of each iteration.
Status WorkerRunner::RunToken() {
  std::vector<float> params(computer_->num_params());
  PushBuffers buffers(computer_->backend(), params.size());
  std::shared_ptr<std::vector<float>> gradient;
  DMLPS_ASSIGN_OR_RETURN(bool more, Download(0, params));
  if (!more) return Status::Ok();
  int64_t wait_us = 0;
  for (int64_t clock = 0;; ++clock) {
    if (token_ < 0) return Status::Protocol("the server sent no token to train");
    std::vector<float>& grad = buffers.Take(&gradient);
    DMLPS_ASSIGN_OR_RETURN(StepResult step, computer_->Compute(clock, link_.welcome().token_size, params, grad));
    Count(step);
    DMLPS_RETURN_IF_ERROR(SendPush(PushFor(clock, link_.welcome().token_size, step, wait_us), gradient));
    // The answer is the next token on this model (Continue), or the new
    // model with a token once the iteration is complete.
    const Clock::time_point asked = Clock::now();
    const int64_t asked_us = trace::NowMicros();
    DMLPS_ASSIGN_OR_RETURN(proto::Message reply,
                           link_.Await({proto::MsgType::kContinue, proto::MsgType::kModel}));
    if (link_.stopped()) return Status::Ok();
    if (auto* next = std::get_if<proto::Continue>(&reply.body)) {
      token_ = next->token;
    } else {
      DMLPS_RETURN_IF_ERROR(TakeModel(reply, params));
      if (link_.stopped()) return Status::Ok();
    }
    wait_us = Micros(Clock::now() - asked);
    report_.wait_s += wait_us * 1e-6;
    if (tracer_) tracer_->Span("wait", "reply", asked_us, wait_us, {{"clock", clock}});
  }
}

Status WorkerRunner::Prepare() {
  DMLPS_RETURN_IF_ERROR(link_.LoadKeys());
  DMLPS_ASSIGN_OR_RETURN(data_spec_, data::ParseDataSpec(config_.data));
  // Fail before joining when the data is plainly missing: a server should not
  // wait for a worker that can never train.
  DMLPS_RETURN_IF_ERROR(CheckReadable(data_spec_.train_images));
  if (!data_spec_.train_labels.empty()) DMLPS_RETURN_IF_ERROR(CheckReadable(data_spec_.train_labels));
  // Likewise a device that cannot be used: no CUDA here, no GPU, no driver.
  DMLPS_ASSIGN_OR_RETURN(device_, model::ParseDevice(config_.device));
  std::string device_name;
  DMLPS_ASSIGN_OR_RETURN(model::DeviceMemory memory, model::ProbeDevice(device_, &device_name));
  max_batch_ = config_.max_batch;
  if (config_.max_batch_auto) {
    // The model's shape needs the data's: a sliver of it tells.
    DMLPS_ASSIGN_OR_RETURN(data::Dataset sample, data::LoadTrain(data_spec_, data::Shard{0, 1000}));
    DMLPS_ASSIGN_OR_RETURN(model::ModelSpec spec,
                           model::ParseModelSpec(config_.model, sample.dim,
                                                 std::max<int64_t>(2, sample.classes)));
    max_batch_ = model::MaxBatchForMemory(spec, memory.free_bytes);
    sized_for_ = spec;
    spdlog::info("--max-batch auto: {} samples of {} fit in 80% of the {:.2f} GiB free on {}",
                 max_batch_, spec.Name(), static_cast<double>(memory.free_bytes) / (1 << 30),
                 device_name);
  }
  // A GPU is worth a line; the CPU, the default, only in debug.
  spdlog::log(device_.is_cuda() ? spdlog::level::info : spdlog::level::debug, "computing on {}",
              device_name);
  return Status::Ok();
}

Status WorkerRunner::Setup() {
  const proto::Welcome& welcome = link_.welcome();
  const data::Shard shard{welcome.shard_index, welcome.shard_count};
  if (shard.count < 1 || shard.index < 0 || shard.index >= shard.count || welcome.batch < 1 ||
      welcome.chunk < 0 || welcome.token_size < 0) {
    return Status::Protocol("the server sent an impossible shard, batch, chunk or token size");
  }
  DMLPS_ASSIGN_OR_RETURN(data::Dataset data, data::LoadTrain(data_spec_, shard));
  DMLPS_RETURN_IF_ERROR(data.ConformTo(welcome.input_dim, welcome.classes)
                            .WithContext(config_.data + " does not fit the server's model"));
  const int64_t rows = data.rows();
  if (rows == 0) return Status::DataLoss(config_.data + ": this worker's shard is empty");
  DMLPS_ASSIGN_OR_RETURN(model::ModelSpec spec, model::ParseModelSpec(welcome.model,
                                                                       welcome.input_dim,
                                                                       welcome.classes));
  if (sized_for_.has_value() && sized_for_->Name() != spec.Name()) {
    std::string message = "--max-batch auto was derived for ";
    message += sized_for_->Name();
    message += ", but the server trains ";
    message += spec.Name();
    message += "; pass --model ";
    message += spec.Name();
    return Status::Config(message);
  }
  DMLPS_ASSIGN_OR_RETURN(std::unique_ptr<model::Backend> model, model::MakeBackend(spec, device_));
  if (model->num_params() != welcome.num_params) {
    return Status::Protocol("the server's model has " + std::to_string(welcome.num_params) +
                            " parameters, " + spec.Name() + " here has " +
                            std::to_string(model->num_params()));
  }
  batch_ = welcome.batch;
  if (!config_.trace.empty() && tracer_ == nullptr) {  // once: a rejoin keeps the trace
    DMLPS_ASSIGN_OR_RETURN(tracer_, trace::TraceWriter::Open(config_.trace,
                                                             "worker-" + std::to_string(welcome.rank)));
    tracer_->Counter("batch", trace::NowMicros(), static_cast<double>(batch_));
  }
  const uint64_t seed = welcome.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(welcome.rank);
  StragglerSpec straggler = config_.straggler;
  straggler.seed ^= seed;
  computer_ = std::make_unique<StepComputer>(
      std::move(data), std::move(model), seed,
      StragglerProfile(straggler, welcome.rank, welcome.num_workers), tracer_.get(),
      [this](std::chrono::microseconds d) { return link_.Pause(d); });
  spdlog::info("worker {} of {}: policy {} ({} steps), model {}, shard {}/{} with {} samples, "
               "batch {}",
               welcome.rank, welcome.num_workers, welcome.policy, welcome.mode, spec.Name(),
               shard.index, shard.count, rows, welcome.batch);
  return Status::Ok();
}

Status WorkerRunner::Train() {
  DMLPS_RETURN_IF_ERROR(Setup());
  const Clock::time_point start = Clock::now();
  Status status = RunMode();
  while (!status.ok() && link_.server_lost() && !link_.stopped() && !link_.Interrupted()) {
    spdlog::warn("{}; reconnecting for up to {:g} s", status.message(),
                 config_.reconnect_timeout.count() / 1000.0);
    status = Reconnect();
    if (!status.ok() || link_.stopped()) break;
    status = RunMode();
  }
  report_.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  report_.stop_reason = link_.stop_reason();
  return status;
}

Status WorkerRunner::Reconnect() {
  Result<bool> moved = link_.Rejoin();
  report_.rank = link_.rank();
  report_.reconnects = link_.reconnects();
  DMLPS_RETURN_IF_ERROR(moved.status());
  if (link_.stopped()) return Status::Ok();  // the run ended meanwhile
  if (*moved) DMLPS_RETURN_IF_ERROR(Setup());
  token_ = -1;
  spdlog::info("rejoined the server at {} as worker {}", config_.server, link_.welcome().rank);
  return Status::Ok();
}

Status WorkerRunner::RunMode() {
  Status status;
  const std::string& mode = link_.welcome().mode;
  if (mode == "sync" || mode.empty()) {
    status = RunSync(false);
  } else if (mode == "chunked") {
    if (link_.welcome().chunk < 1) return Status::Protocol("chunked steps need a chunk size");
    status = RunSync(true);
  } else if (mode == "local") {
    status = RunLocal();
  } else if (mode == "local-overlap") {
    status = RunLocalOverlap();
  } else if (mode == "token") {
    if (link_.welcome().token_size < 1) return Status::Protocol("token steps need a token size");
    status = RunToken();
  } else {
    return Status::Protocol("the server asks for steps of an unknown kind '" + mode + "'");
  }
  return status;
}

Result<WorkerReport> WorkerRunner::Run() {
  Eigen::setNbThreads(static_cast<int>(config_.threads));
  DMLPS_RETURN_IF_ERROR(Prepare());
  Status joined = link_.Join(max_batch_);
  report_.rank = link_.rank();
  report_.signal = signal_ != nullptr ? signal_->load() : 0;
  if (report_.signal != 0) return report_;
  DMLPS_RETURN_IF_ERROR(joined);
  Status trained = Train();
  report_.signal = signal_ != nullptr ? signal_->load() : 0;
  if (!trained.ok()) {
    link_.Leave(report_.signal != 0 ? "worker interrupted" : trained.message());
  }
  if (report_.signal != 0) return report_;
  DMLPS_RETURN_IF_ERROR(trained);
  spdlog::info("stopped by the server ({}): {} steps, {} samples; compute {:.1f} s, "
               "straggle {:.1f} s, wait {:.1f} s, send {:.1f} s of {:.1f} s",
               report_.stop_reason, report_.steps, report_.samples, report_.compute_s,
               report_.straggle_s, report_.wait_s, report_.comm_s, report_.seconds);
  return report_;
}

}  // namespace

std::vector<std::string> ValidateConfig(const WorkerConfig& config) {
  std::vector<std::string> problems = ValidateStragglerSpec(config.straggler);
  if (config.rank < -1) problems.push_back("--rank must not be negative");
  if (config.threads < 1 || config.threads > 1024) problems.push_back("--threads must be in 1..1024");
  if (config.max_batch < 0) problems.push_back("--max-batch must not be negative");
  if (Result<model::Device> d = model::ParseDevice(config.device); !d.ok()) {
    problems.push_back("--device: " + d.status().message());
  }
  if (config.max_batch_auto) {
    if (Result<model::ModelSpec> m = model::ParseModelSpec(config.model, 16, 2); !m.ok()) {
      problems.push_back("--model: " + m.status().message());
    }
  }
  if (config.connect_timeout.count() <= 0) problems.push_back("--connect-timeout must be positive");
  if (config.server_timeout.count() <= 0) problems.push_back("--server-timeout must be positive");
  if (config.curve_secret.empty() != config.curve_server_key.empty()) {
    problems.push_back("--curve-secret and --curve-server-key go together");
  }
  if (config.reconnect_timeout.count() < 0) {
    problems.push_back("--reconnect-timeout must not be negative");
  }
  if (config.heartbeat.count() < 1) problems.push_back("--heartbeat-ms must be at least 1");
  if (Result<data::DataSpec> d = data::ParseDataSpec(config.data); !d.ok()) {
    problems.push_back("--data: " + d.status().message());
  }
  return problems;
}

Result<WorkerReport> RunWorker(const WorkerConfig& config, const std::atomic<int>* signal) {
  WorkerRunner runner(config, signal);
  return runner.Run();
}

}  // namespace dmlps::worker
