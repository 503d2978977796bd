#include "dmlps/worker/worker.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <Eigen/Core>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "dmlps/data/dataset.h"
#include "dmlps/model/backend.h"
#include "dmlps/model/model.h"
#include "dmlps/net/curve.h"
#include "dmlps/net/endpoint.h"
#include "dmlps/optim/optimizer.h"
#include "dmlps/proto/codec.h"
#include "dmlps/trace/trace.h"
#include "dmlps/worker/epoch_cursor.h"
#include "dmlps/worker/resource_usage.h"

namespace dmlps::worker {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using Vec = Eigen::Map<Eigen::VectorXf>;
using ConstVec = Eigen::Map<const Eigen::VectorXf>;

constexpr milliseconds kPollSlice{100};
constexpr milliseconds kUsageEvery{100};

int64_t Micros(Clock::duration d) {
  return std::chrono::duration_cast<microseconds>(d).count();
}

Status CheckReadable(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return Status::NotFound(path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return Status::NotFound(path + ": not a regular file");
  return Status::Ok();
}

// The vectors pushes send from. ZeroMQ may still be sending from one, so a
// buffer is reused only once nothing else holds it. They live as long as the
// loop that pushes them, so a GPU backend page-locks each once and copies
// gradients straight into what the push sends.
class PushBuffers {
 public:
  PushBuffers(model::Backend* backend, size_t size) : backend_(backend), size_(size) {}
  PushBuffers(const PushBuffers&) = delete;
  PushBuffers& operator=(const PushBuffers&) = delete;
  ~PushBuffers() {
    for (const auto& buffer : buffers_) backend_->UnpinHostBuffer(*buffer);
  }

  // A buffer that nothing but `*held` (the caller's last one) and this pool
  // holds; *held becomes it.
  std::vector<float>& Take(std::shared_ptr<std::vector<float>>* held) {
    held->reset();
    for (const auto& buffer : buffers_) {
      if (buffer.use_count() == 1) {
        *held = buffer;
        return **held;
      }
    }
    auto buffer = std::make_shared<std::vector<float>>(size_);
    if (Status pinned = backend_->PinHostBuffer(*buffer); !pinned.ok()) {
      spdlog::warn("pushes will be staged through pageable memory: {}", pinned.message());
    } else {
      buffers_.push_back(buffer);
    }
    *held = std::move(buffer);
    return **held;
  }

 private:
  model::Backend* backend_;
  size_t size_;
  std::vector<std::shared_ptr<std::vector<float>>> buffers_;
};

// What one computed step produced, for its push.
struct StepResult {
  double loss = 0;
  int64_t samples = 0;
  microseconds compute{0};
  microseconds straggle{0};
};

class WorkerRunner {
 public:
  WorkerRunner(const WorkerConfig& config, const std::atomic<int>* signal)
      : config_(config), signal_(signal) {}

  Result<WorkerReport> Run();

 private:
  Status Prepare();
  Status Join();
  Status Setup();
  Status Train();
  // Runs the steps of the policy's mode until the server stops the worker.
  Status RunMode();
  // Joins the server again after it went away, retrying with back-off for
  // --reconnect-timeout; Unavailable when it does not come back.
  Status Reconnect();
  // Sends a heartbeat when one is due; only from the thread that owns the
  // socket.
  void MaybeHeartbeat();

  // The loops, one per sync::WorkerMode.
  Status RunSync(bool chunked);
  Status RunLocal();
  Status RunLocalOverlap();
  Status RunToken();

  // Waits for a message of type `want` (or Stop), handling heartbeats, the
  // server's warnings and SyncNow on the way, for at most `silence` without
  // any message from the server.
  Result<proto::Message> Await(net::Endpoint& from, std::initializer_list<proto::MsgType> wants,
                               milliseconds silence);
  Result<proto::Message> Await(std::initializer_list<proto::MsgType> wants, milliseconds silence) {
    return Await(*endpoint_, wants, silence);
  }
  Result<proto::Message> Await(std::initializer_list<proto::MsgType> wants) {
    return Await(*endpoint_, wants, config_.server_timeout);
  }
  // Sharded servers: connects to shards 1 and up (welcome_.servers) and
  // waits until each knows this worker.
  Status ConnectShards();
  // Where server shard k's slice of the parameters begins (k = shards: the end).
  int64_t Bound(size_t k) const {
    return welcome_.bounds.empty() ? (k == 0 ? 0 : model_->num_params()) : welcome_.bounds[k];
  }
  // Copies a Model message from `from` into `out` (its slice of the model),
  // its streamed chunks as they arrive.
  Status TakeSlice(net::Endpoint& from, proto::Message& message, std::span<float> out);
  // Handles what arrived without blocking; sets stop_ on Stop.
  Status PollControl();
  // Deals with a message nobody waits for. Fails on a fatal Error.
  Status HandleAside(const proto::Message& message);
  // Sends Pull (unless `pulled`: sent with the push) and waits for the model
  // or Stop; copies the model into params.
  Result<bool> Download(int64_t clock, std::span<float> params, bool pulled = false);
  // Copies a Model message's payload into params and notes its version, batch, token.
  Status TakeModel(proto::Message& message, std::span<float> params);
  // Computes the mean gradient of `samples` samples on params into grad;
  // then sleeps the emulated slowness of `step`. A step's later chunks
  // (first_part false) only scale with the slowdown: delays come once a step.
  Result<StepResult> Compute(int64_t step, int64_t samples, std::span<const float> params,
                             std::span<float> grad, bool first_part = true);
  // Sends a push and its payload, after the emulated transfer time.
  // `then`, when given, goes right after the push's header, before its
  // chunks: the next Pull, so that a large model streams back while the
  // gradient is still arriving.
  Status SendPush(proto::Push push, std::shared_ptr<const std::vector<float>> payload,
                  const proto::Body* then = nullptr);
  bool Interrupted() const;
  // The push that reports `step`, the worker's step number `clock`, on the
  // model last received, after waiting `wait_us` for the server.
  proto::Push PushFor(int64_t clock, int64_t batch, const StepResult& step, int64_t wait_us) const;
  Status SleepInterruptibly(microseconds d);
  void Count(const StepResult& step);

  const WorkerConfig& config_;
  const std::atomic<int>* signal_;
  zmq::context_t context_;
  std::optional<net::Endpoint> endpoint_;
  // Sharded servers: shards 1 and up, on a context of their own.
  std::unique_ptr<zmq::context_t> shard_context_;
  std::vector<net::Endpoint> shards_;
  net::ConnectOptions connect_options_;  // CURVE keys, read before joining
  proto::Welcome welcome_;
  data::DataSpec data_spec_;
  data::Dataset shard_;
  model::Device device_;
  int64_t max_batch_ = 0;                   // sent with Hello
  std::optional<model::ModelSpec> sized_for_;  // the model --max-batch auto was derived for
  std::unique_ptr<model::Backend> model_;
  std::optional<EpochCursor> cursor_;
  std::optional<StragglerProfile> straggler_;
  std::unique_ptr<trace::TraceWriter> tracer_;  // null without --trace
  std::vector<int64_t> indices_;
  Eigen::MatrixXf x_;
  std::vector<int32_t> y_;

  int64_t version_ = 0;       // of the model last received
  int64_t batch_ = 0;         // samples per step, as the server last set it
  int64_t token_ = -1;        // token granted with the last reply
  int64_t sync_round_ = -1;   // the newest round a SyncNow named
  bool server_lost_ = false;  // the server went silent, or no longer knows this worker
  bool refused_ = false;      // the server refused this worker (fatal Error)
  bool gave_up_ = false;      // the server did not come back: no one to tell
  std::thread::id socket_thread_;   // the thread that may use endpoint_
  Clock::time_point last_heartbeat_;
  bool stop_ = false;
  std::string stop_reason_;
  int64_t comm_us_ = 0;       // time the last send took, reported with the next push
  int64_t bytes_sent_ = 0;    // payload bytes pushed so far
  std::optional<ResourceSample> usage_;  // the latest /proc reading
  Clock::time_point usage_read_;         // when it was attempted
  double cpu_cores_ = 0;                 // CPU use between the last two readings
  WorkerReport report_;
};

bool WorkerRunner::Interrupted() const { return signal_ != nullptr && signal_->load() != 0; }

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

Status WorkerRunner::HandleAside(const proto::Message& message) {
  const proto::MsgType type = proto::TypeOf(message.body);
  if (auto* error = std::get_if<proto::Error>(&message.body)) {
    if (error->fatal && error->rejoin && report_.rank >= 0) {
      // A server that restarted, or one that declared this worker lost.
      server_lost_ = true;
      return Status::Unavailable("the server no longer knows this worker: " + error->message);
    }
    if (error->fatal) {
      refused_ = true;
      return Status::Unavailable("the server refused this worker: " + error->message);
    }
    spdlog::warn("the server says: {}", error->message);
  } else if (auto* sync = std::get_if<proto::SyncNow>(&message.body)) {
    sync_round_ = std::max(sync_round_, sync->round);
  } else if (auto* stop = std::get_if<proto::Stop>(&message.body)) {
    stop_ = true;
    stop_reason_ = stop->reason;
  } else if (type != proto::MsgType::kHeartbeat) {
    spdlog::warn("ignoring an unexpected {} from the server", proto::MsgTypeName(type));
  }
  return Status::Ok();
}

Result<proto::Message> WorkerRunner::Await(net::Endpoint& from,
                                           std::initializer_list<proto::MsgType> wants,
                                           milliseconds silence) {
  Clock::time_point deadline = Clock::now() + silence;
  net::Frames frames;
  while (true) {
    if (Interrupted()) return Status::Unavailable("interrupted");
    if (Clock::now() >= deadline) {
      server_lost_ = true;
      std::string who = "the server at " + config_.server;
      for (size_t k = 1; k <= shards_.size(); ++k) {
        if (&from == &shards_[k - 1]) {
          who = "server shard " + std::to_string(k) + " at " + welcome_.servers[k];
        }
      }
      return Status::Unavailable("no answer from " + who + " for " +
                                 fmt::format("{:g}", silence.count() / 1000.0) + " s");
    }
    MaybeHeartbeat();
    if (&from != &*endpoint_) {
      // Awaiting another server shard: shard 0 may stop the run meanwhile
      // (one shard lost, say), or fail this worker.
      DMLPS_RETURN_IF_ERROR(PollControl());
      if (stop_) return proto::Message{proto::Stop{stop_reason_}, {}};
    }
    DMLPS_ASSIGN_OR_RETURN(bool got, from.Receive(&frames, kPollSlice));
    if (!got) continue;
    deadline = Clock::now() + silence;
    Result<proto::Message> message = proto::DecodeMessage(frames, 0);
    if (!message.ok()) return message.status().WithContext("bad message from the server");
    const proto::MsgType type = proto::TypeOf(message->body);
    if (std::find(wants.begin(), wants.end(), type) != wants.end() ||
        type == proto::MsgType::kStop) {
      if (auto* stop = std::get_if<proto::Stop>(&message->body)) {
        stop_ = true;
        stop_reason_ = stop->reason;
      }
      return message;
    }
    DMLPS_RETURN_IF_ERROR(HandleAside(*message));
  }
}

void WorkerRunner::MaybeHeartbeat() {
  if (std::this_thread::get_id() != socket_thread_) return;
  const Clock::time_point now = Clock::now();
  if (now - last_heartbeat_ < config_.heartbeat) return;
  last_heartbeat_ = now;
  const int64_t now_us = trace::NowMicros();
  if (Status sent = endpoint_->SendMessage(nullptr, proto::Heartbeat{now_us}); !sent.ok()) {
    spdlog::debug("heartbeat to the server failed: {}", sent.ToString());
  }
}

Status WorkerRunner::PollControl() {
  MaybeHeartbeat();
  net::Frames frames;
  while (true) {
    DMLPS_ASSIGN_OR_RETURN(bool got, endpoint_->Receive(&frames, milliseconds(0)));
    if (!got) return Status::Ok();
    Result<proto::Message> message = proto::DecodeMessage(frames, 0);
    if (!message.ok()) return message.status().WithContext("bad message from the server");
    DMLPS_RETURN_IF_ERROR(HandleAside(*message));
  }
}

Status WorkerRunner::TakeSlice(net::Endpoint& from, proto::Message& message,
                               std::span<float> out) {
  const auto& header = std::get<proto::Model>(message.body);
  if (header.num_params != static_cast<int64_t>(out.size())) {
    return Status::Protocol("the server sent a model of " + std::to_string(header.num_params) +
                            " parameters, expected " + std::to_string(out.size()));
  }
  DMLPS_ASSIGN_OR_RETURN(proto::IncomingTensor model,
                         proto::IncomingTensor::Open(header.num_params, header.chunks,
                                                     header.chunk_floats,
                                                     std::move(message.payload)));
  model.CopyTo(0, model.received(), out);
  // A streamed model: each chunk is copied in as it arrives.
  while (!model.complete()) {
    DMLPS_ASSIGN_OR_RETURN(proto::Message piece, Await(from, {proto::MsgType::kChunk},
                                                       config_.server_timeout));
    if (stop_) return Status::Ok();
    const int64_t begin = model.received();
    DMLPS_RETURN_IF_ERROR(model.Add(std::get<proto::Chunk>(piece.body).index, piece.payload)
                              .WithContext("bad model from the server"));
    model.CopyTo(begin, model.received(), out);
    model.Release(begin, model.received());  // a large model never sits here whole
  }
  return Status::Ok();
}

Status WorkerRunner::TakeModel(proto::Message& message, std::span<float> params) {
  const proto::Model header = std::get<proto::Model>(message.body);
  DMLPS_RETURN_IF_ERROR(TakeSlice(*endpoint_, message, params.subspan(0, Bound(1))));
  // Sharded: the other slices come from their shards, sent as shard 0 sent
  // this one.
  for (size_t k = 1; k <= shards_.size() && !stop_; ++k) {
    DMLPS_ASSIGN_OR_RETURN(proto::Message slice, Await(shards_[k - 1], {proto::MsgType::kModel},
                                                       config_.server_timeout));
    if (stop_) return Status::Ok();
    const auto version = std::get<proto::Model>(slice.body).version;
    if (version != header.version) {
      return Status::Protocol("server shard " + std::to_string(k) + " sent version " +
                              std::to_string(version) + " of its slice, shard 0 version " +
                              std::to_string(header.version));
    }
    DMLPS_RETURN_IF_ERROR(TakeSlice(shards_[k - 1], slice,
                                    params.subspan(static_cast<size_t>(Bound(k)),
                                                   static_cast<size_t>(Bound(k + 1) - Bound(k)))));
  }
  if (stop_) return Status::Ok();
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
  if (!pulled) DMLPS_RETURN_IF_ERROR(endpoint_->SendMessage(nullptr, proto::Pull{clock}));
  DMLPS_ASSIGN_OR_RETURN(proto::Message reply, Await({proto::MsgType::kModel}));
  // A streamed model's chunks arrive while this waits.
  if (!stop_) DMLPS_RETURN_IF_ERROR(TakeModel(reply, params));
  report_.wait_s += std::chrono::duration<double>(Clock::now() - start).count();
  if (tracer_) tracer_->Span("wait", "pull", start_us, Micros(Clock::now() - start), {{"clock", clock}});
  return !stop_;
}

Status WorkerRunner::SleepInterruptibly(microseconds d) {
  const Clock::time_point until = Clock::now() + d;
  while (Clock::now() < until) {
    if (Interrupted()) return Status::Unavailable("interrupted");
    MaybeHeartbeat();  // a long emulated delay must not look like a dead worker
    std::this_thread::sleep_for(std::min<Clock::duration>(until - Clock::now(), kPollSlice));
  }
  return Status::Ok();
}

Result<StepResult> WorkerRunner::Compute(int64_t step, int64_t samples,
                                         std::span<const float> params, std::span<float> grad,
                                         bool first_part) {
  StepResult result;
  const Clock::time_point start = Clock::now();
  const int64_t start_us = trace::NowMicros();
  cursor_->Take(samples, &indices_);
  shard_.Gather(indices_, &x_, &y_);
  DMLPS_ASSIGN_OR_RETURN(result.loss, model_->LossAndGradient(params, x_, y_, grad));
  result.compute = microseconds(Micros(Clock::now() - start));
  result.samples = samples;
  result.straggle =
      first_part ? straggler_->ExtraDelay(step, result.compute)
                 : microseconds(std::llround((straggler_->SlowdownAt(step) - 1) *
                                             static_cast<double>(result.compute.count())));
  if (tracer_) {
    tracer_->Span("compute", "step", start_us, result.compute.count(),
                  {{"clock", step}, {"samples", samples}, {"loss", result.loss}});
  }
  if (result.straggle.count() > 0) {
    if (tracer_) {
      tracer_->Span("compute", "straggle", start_us + result.compute.count(),
                    result.straggle.count(), {{"clock", step}});
    }
    DMLPS_RETURN_IF_ERROR(SleepInterruptibly(result.straggle));
  }
  if (!std::isfinite(result.loss)) spdlog::warn("step {}: the training loss is {}", step, result.loss);
  return result;
}

Status WorkerRunner::SendPush(proto::Push push, std::shared_ptr<const std::vector<float>> payload,
                              const proto::Body* then) {
  const Clock::time_point start = Clock::now();
  const int64_t start_us = trace::NowMicros();
  const int64_t bytes = static_cast<int64_t>(payload->size() * sizeof(float));
  const microseconds transfer =
      straggler_->TransferTime(push.clock, bytes);
  if (transfer.count() > 0) DMLPS_RETURN_IF_ERROR(SleepInterruptibly(transfer));
  push.num_params = model_->num_params();
  push.comm_us = comm_us_;
  // CPU and memory as /proc tells them, for predictors that take them in.
  // A reading costs about 26 µs, a few percent of a small step, so it is
  // taken at most every kUsageEvery and repeated in between.
  if (usage_ == std::nullopt || Clock::now() - usage_read_ >= kUsageEvery) {
    if (Result<ResourceSample> now = ReadSelfUsage(); now.ok()) {
      if (usage_.has_value()) cpu_cores_ = CpuCores(*usage_, *now);
      usage_ = *now;
    }
    usage_read_ = Clock::now();
  }
  push.cpu = cpu_cores_;
  push.memory_bytes = usage_.has_value() ? usage_->resident_bytes : 0;
  // Larger than a chunk: streamed, so the server sums the first chunks while
  // the later ones are on the wire.
  if (shards_.empty()) {
    DMLPS_RETURN_IF_ERROR(endpoint_->SendWithPayload(nullptr, push, std::move(payload),
                                                     proto::kDefaultChunkBytes, then));
  } else {
    // Each shard its slice, the others first: shard 0's orders for this push
    // then find it there. ZeroMQ's I/O threads send them in parallel.
    for (size_t k = 1; k <= shards_.size(); ++k) {
      proto::Push slice = push;
      slice.num_params = Bound(k + 1) - Bound(k);
      DMLPS_RETURN_IF_ERROR(shards_[k - 1].SendWithPayload(nullptr, slice, payload, Bound(k),
                                                           slice.num_params,
                                                           proto::kDefaultChunkBytes));
    }
    push.num_params = Bound(1);
    DMLPS_RETURN_IF_ERROR(endpoint_->SendWithPayload(nullptr, push, std::move(payload), 0,
                                                     Bound(1), proto::kDefaultChunkBytes, then));
  }
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
  std::vector<float> params(model_->num_params());
  PushBuffers buffers(model_.get(), params.size());
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
      DMLPS_ASSIGN_OR_RETURN(step, Compute(clock, batch_, params, grad));
      Count(step);
    } else {
      // A-BSP: chunk after chunk, looking for SyncNow in between; the mean
      // gradient over the samples actually processed is what goes out.
      Vec sum(grad.data(), static_cast<Eigen::Index>(grad.size()));
      sum.setZero();
      double loss_sum = 0;
      while (step.samples < batch_) {
        const int64_t n = std::min(welcome_.chunk, batch_ - step.samples);
        DMLPS_ASSIGN_OR_RETURN(StepResult part,
                               Compute(clock, n, params, chunk_gradient, step.samples == 0));
        Count(part);
        sum += static_cast<float>(n) * ConstVec(chunk_gradient.data(), sum.size());
        loss_sum += part.loss * static_cast<double>(n);
        step.samples += n;
        step.compute += part.compute;
        step.straggle += part.straggle;
        DMLPS_RETURN_IF_ERROR(PollControl());
        if (stop_) return Status::Ok();
        if (sync_round_ >= clock) break;  // told to stop: the rest waits for the next step
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
  const size_t n = static_cast<size_t>(model_->num_params());
  std::vector<float> params(n), base(n), grad(n), velocity(n, 0.f);
  PushBuffers buffers(model_.get(), n);
  std::shared_ptr<std::vector<float>> delta;
  DMLPS_ASSIGN_OR_RETURN(bool more, Download(0, params));
  if (!more) return Status::Ok();
  base = params;
  const auto lr = static_cast<float>(welcome_.lr);
  const auto mu = static_cast<float>(welcome_.momentum);
  int64_t wait_us = 0;
  for (int64_t clock = 0;; ++clock) {
    DMLPS_ASSIGN_OR_RETURN(StepResult step, Compute(clock, batch_, params, grad));
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
    DMLPS_ASSIGN_OR_RETURN(proto::Message reply, Await({proto::MsgType::kContinue}));
    wait_us = Micros(Clock::now() - asked);
    report_.wait_s += wait_us * 1e-6;
    if (tracer_) tracer_->Span("wait", "reply", asked_us, wait_us, {{"clock", clock}});
    if (stop_) return Status::Ok();
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
  const size_t n = static_cast<size_t>(model_->num_params());
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
    const auto lr = static_cast<float>(welcome_.lr);
    const auto mu = static_cast<float>(welcome_.momentum);
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
      Result<StepResult> step = Compute(step_no, batch_, params, grad);
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
  PushBuffers buffers(model_.get(), n);
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
        status = PollControl();
        if (stop_ || Interrupted()) break;
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
    Result<proto::Message> reply = Await({proto::MsgType::kContinue});
    if (!reply.ok()) {
      status = reply.status();
      break;
    }
    if (stop_) break;
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
  std::vector<float> params(model_->num_params());
  PushBuffers buffers(model_.get(), params.size());
  std::shared_ptr<std::vector<float>> gradient;
  DMLPS_ASSIGN_OR_RETURN(bool more, Download(0, params));
  if (!more) return Status::Ok();
  int64_t wait_us = 0;
  for (int64_t clock = 0;; ++clock) {
    if (token_ < 0) return Status::Protocol("the server sent no token to train");
    std::vector<float>& grad = buffers.Take(&gradient);
    DMLPS_ASSIGN_OR_RETURN(StepResult step, Compute(clock, welcome_.token_size, params, grad));
    Count(step);
    DMLPS_RETURN_IF_ERROR(SendPush(PushFor(clock, welcome_.token_size, step, wait_us), gradient));
    // The answer is the next token on this model (Continue), or the new
    // model with a token once the iteration is complete.
    const Clock::time_point asked = Clock::now();
    const int64_t asked_us = trace::NowMicros();
    DMLPS_ASSIGN_OR_RETURN(proto::Message reply,
                           Await({proto::MsgType::kContinue, proto::MsgType::kModel}));
    if (stop_) return Status::Ok();
    if (auto* next = std::get_if<proto::Continue>(&reply.body)) {
      token_ = next->token;
    } else {
      DMLPS_RETURN_IF_ERROR(TakeModel(reply, params));
      if (stop_) return Status::Ok();
    }
    wait_us = Micros(Clock::now() - asked);
    report_.wait_s += wait_us * 1e-6;
    if (tracer_) tracer_->Span("wait", "reply", asked_us, wait_us, {{"clock", clock}});
  }
}

Status WorkerRunner::Prepare() {
  if (!config_.curve_secret.empty()) {
    DMLPS_ASSIGN_OR_RETURN(net::CurveKeyPair pair, net::ReadSecretKeyFile(config_.curve_secret));
    DMLPS_ASSIGN_OR_RETURN(connect_options_.curve_server_key,
                           net::ReadPublicKey(config_.curve_server_key));
    connect_options_.curve_secret = pair.secret_key;
  }
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

Status WorkerRunner::Join() {
  DMLPS_ASSIGN_OR_RETURN(net::Endpoint endpoint,
                         net::Endpoint::Connect(context_, config_.server, connect_options_));
  endpoint_.emplace(std::move(endpoint));
  proto::Hello hello{config_.rank, net::HostName(), static_cast<int64_t>(getpid()), config_.threads,
                     max_batch_, -1, 0, {}};
  DMLPS_RETURN_IF_ERROR(endpoint_->SendMessage(nullptr, hello));
  Result<proto::Message> reply = Await({proto::MsgType::kWelcome}, config_.connect_timeout);
  if (!reply.ok()) {
    if (Interrupted()) return reply.status();
    if (reply.status().code() == StatusCode::kUnavailable &&
        reply.status().message().starts_with("no answer")) {
      return Status::Unavailable("no server answered at " + config_.server + " within " +
                                 fmt::format("{:g}", config_.connect_timeout.count() / 1000.0) +
                                 " s");
    }
    return reply.status();
  }
  if (stop_) {
    return Status::Unavailable("the server stopped before this worker joined: " + stop_reason_);
  }
  welcome_ = std::get<proto::Welcome>(reply->body);
  report_.rank = welcome_.rank;
  return ConnectShards();
}

Status WorkerRunner::ConnectShards() {
  shards_.clear();
  const std::vector<int64_t>& bounds = welcome_.bounds;
  if (bounds.empty() && welcome_.servers.empty()) return Status::Ok();
  bool valid = bounds.size() == welcome_.servers.size() + 1 && bounds.size() >= 2 &&
               bounds.front() == 0 && bounds.back() == welcome_.num_params;
  for (size_t k = 1; valid && k < bounds.size(); ++k) valid = bounds[k] > bounds[k - 1];
  if (!valid) return Status::Protocol("the server sent server shards that do not fit its model");
  if (welcome_.servers.size() == 1) return Status::Ok();
  if (shard_context_ == nullptr) {
    // I/O threads of their own, so the slices go out and come in in parallel.
    shard_context_ = std::make_unique<zmq::context_t>(
        static_cast<int>(std::min<size_t>(welcome_.servers.size() - 1, 4)));
  }
  for (size_t k = 1; k < welcome_.servers.size(); ++k) {
    DMLPS_ASSIGN_OR_RETURN(net::Endpoint shard,
                           net::Endpoint::Connect(*shard_context_, welcome_.servers[k],
                                                  connect_options_));
    proto::Hello hello{welcome_.rank, net::HostName(), static_cast<int64_t>(getpid()), config_.threads,
                       max_batch_, -1, 0, {}};
    DMLPS_RETURN_IF_ERROR(shard.SendMessage(nullptr, hello));
    shards_.push_back(std::move(shard));
  }
  // Every shard must know this worker before shard 0 may send it work.
  for (size_t k = 1; k < welcome_.servers.size(); ++k) {
    Result<proto::Message> reply =
        Await(shards_[k - 1], {proto::MsgType::kWelcome}, config_.connect_timeout);
    if (!reply.ok()) {
      return reply.status().WithContext("server shard " + std::to_string(k) + " at " +
                                        welcome_.servers[k]);
    }
    if (stop_) return Status::Ok();
    const auto& welcome = std::get<proto::Welcome>(reply->body);
    if (welcome.num_params != bounds[k + 1] - bounds[k]) {
      return Status::Protocol("server shard " + std::to_string(k) + " holds " +
                              std::to_string(welcome.num_params) + " parameters, not " +
                              std::to_string(bounds[k + 1] - bounds[k]));
    }
  }
  spdlog::info("connected to {} server shards", welcome_.servers.size());
  return Status::Ok();
}

Status WorkerRunner::Setup() {
  const data::Shard shard{welcome_.shard_index, welcome_.shard_count};
  if (shard.count < 1 || shard.index < 0 || shard.index >= shard.count || welcome_.batch < 1 ||
      welcome_.chunk < 0 || welcome_.token_size < 0) {
    return Status::Protocol("the server sent an impossible shard, batch, chunk or token size");
  }
  DMLPS_ASSIGN_OR_RETURN(shard_, data::LoadTrain(data_spec_, shard));
  DMLPS_RETURN_IF_ERROR(shard_.ConformTo(welcome_.input_dim, welcome_.classes)
                            .WithContext(config_.data + " does not fit the server's model"));
  if (shard_.rows() == 0) return Status::DataLoss(config_.data + ": this worker's shard is empty");
  DMLPS_ASSIGN_OR_RETURN(model::ModelSpec spec, model::ParseModelSpec(welcome_.model,
                                                                       welcome_.input_dim,
                                                                       welcome_.classes));
  if (sized_for_.has_value() && sized_for_->Name() != spec.Name()) {
    std::string message = "--max-batch auto was derived for ";
    message += sized_for_->Name();
    message += ", but the server trains ";
    message += spec.Name();
    message += "; pass --model ";
    message += spec.Name();
    return Status::Config(message);
  }
  DMLPS_ASSIGN_OR_RETURN(model_, model::MakeBackend(spec, device_));
  if (model_->num_params() != welcome_.num_params) {
    return Status::Protocol("the server's model has " + std::to_string(welcome_.num_params) +
                            " parameters, " + spec.Name() + " here has " +
                            std::to_string(model_->num_params()));
  }
  const uint64_t seed = welcome_.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(welcome_.rank);
  cursor_.emplace(shard_.rows(), seed);
  StragglerSpec straggler = config_.straggler;
  straggler.seed ^= seed;
  straggler_.emplace(straggler, welcome_.rank, welcome_.num_workers);
  batch_ = welcome_.batch;
  if (!config_.trace.empty() && tracer_ == nullptr) {  // once: a rejoin keeps the trace
    DMLPS_ASSIGN_OR_RETURN(tracer_, trace::TraceWriter::Open(config_.trace,
                                                             "worker-" + std::to_string(welcome_.rank)));
    tracer_->Counter("batch", trace::NowMicros(), static_cast<double>(batch_));
  }
  spdlog::info("worker {} of {}: policy {} ({} steps), model {}, shard {}/{} with {} samples, "
               "batch {}",
               welcome_.rank, welcome_.num_workers, welcome_.policy, welcome_.mode, spec.Name(),
               shard.index, shard.count, shard_.rows(), welcome_.batch);
  return Status::Ok();
}

Status WorkerRunner::Train() {
  DMLPS_RETURN_IF_ERROR(Setup());
  const Clock::time_point start = Clock::now();
  Status status = RunMode();
  while (!status.ok() && server_lost_ && !stop_ && !Interrupted()) {
    spdlog::warn("{}; reconnecting for up to {:g} s", status.message(),
                 config_.reconnect_timeout.count() / 1000.0);
    status = Reconnect();
    if (!status.ok() || stop_) break;
    status = RunMode();
  }
  report_.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  report_.stop_reason = stop_reason_;
  return status;
}

Status WorkerRunner::Reconnect() {
  const Clock::time_point deadline = Clock::now() + config_.reconnect_timeout;
  milliseconds backoff{250};
  int64_t want_rank = welcome_.rank;
  const proto::Welcome before = welcome_;
  while (true) {
    if (Interrupted()) return Status::Unavailable("interrupted");
    const Clock::time_point now = Clock::now();
    if (now >= deadline) {
      // Nobody will read the Hellos still queued: exit without lingering.
      endpoint_->DiscardUnsent();
      gave_up_ = true;
      return Status::Unavailable("the server at " + config_.server + " did not come back within " +
                                 fmt::format("{:g}", config_.reconnect_timeout.count() / 1000.0) +
                                 " s (--reconnect-timeout)");
    }
    // A fresh socket: the server that comes back knows nothing of the old one.
    if (endpoint_.has_value()) endpoint_->DiscardUnsent();  // to the server that went away
    endpoint_.reset();
    DMLPS_ASSIGN_OR_RETURN(net::Endpoint endpoint, net::Endpoint::Connect(context_, config_.server));
    endpoint_.emplace(std::move(endpoint));
    server_lost_ = false;
    refused_ = false;
    stop_ = false;
    proto::Hello hello{want_rank, net::HostName(), static_cast<int64_t>(getpid()), config_.threads,
                       config_.max_batch, -1, 0, {}};
    DMLPS_RETURN_IF_ERROR(endpoint_->SendMessage(nullptr, hello));
    const auto wait = std::min(backoff, std::chrono::duration_cast<milliseconds>(deadline - now) +
                                            milliseconds(1));
    Result<proto::Message> reply = Await({proto::MsgType::kWelcome}, wait);
    if (reply.ok() && stop_) return Status::Ok();  // the run ended meanwhile
    if (reply.ok()) {
      const auto& welcome = std::get<proto::Welcome>(reply->body);
      if (welcome.model != before.model || welcome.num_params != before.num_params ||
          welcome.mode != before.mode || welcome.input_dim != before.input_dim ||
          welcome.classes != before.classes) {
        return Status::Config("the server came back with another job (model " + welcome.model +
                              ", " + welcome.mode + " steps)");
      }
      welcome_ = welcome;
      report_.rank = welcome_.rank;
      ++report_.reconnects;
      DMLPS_RETURN_IF_ERROR(ConnectShards());
      if (welcome.shard_index != before.shard_index || welcome.shard_count != before.shard_count ||
          welcome.rank != before.rank) {
        DMLPS_RETURN_IF_ERROR(Setup());
      }
      sync_round_ = -1;
      token_ = -1;
      spdlog::info("rejoined the server at {} as worker {}", config_.server, welcome_.rank);
      return Status::Ok();
    }
    if (refused_) want_rank = -1;  // e.g. its rank is taken: any will do
    spdlog::debug("no server yet: {}", reply.status().message());
    // Await waited `wait` already when nothing came; a refusal comes back at once.
    if (refused_) std::this_thread::sleep_for(std::min(backoff, milliseconds(1000)));
    backoff = std::min(backoff * 2, milliseconds(4000));
  }
}

Status WorkerRunner::RunMode() {
  server_lost_ = false;
  Status status;
  const std::string& mode = welcome_.mode;
  if (mode == "sync" || mode.empty()) {
    status = RunSync(false);
  } else if (mode == "chunked") {
    if (welcome_.chunk < 1) return Status::Protocol("chunked steps need a chunk size");
    status = RunSync(true);
  } else if (mode == "local") {
    status = RunLocal();
  } else if (mode == "local-overlap") {
    status = RunLocalOverlap();
  } else if (mode == "token") {
    if (welcome_.token_size < 1) return Status::Protocol("token steps need a token size");
    status = RunToken();
  } else {
    return Status::Protocol("the server asks for steps of an unknown kind '" + mode + "'");
  }
  return status;
}

Result<WorkerReport> WorkerRunner::Run() {
  Eigen::setNbThreads(static_cast<int>(config_.threads));
  socket_thread_ = std::this_thread::get_id();
  DMLPS_RETURN_IF_ERROR(Prepare());
  Status joined = Join();
  report_.signal = signal_ != nullptr ? signal_->load() : 0;
  if (report_.signal != 0) return report_;
  DMLPS_RETURN_IF_ERROR(joined);
  Status trained = Train();
  report_.signal = signal_ != nullptr ? signal_->load() : 0;
  if (!trained.ok() && endpoint_.has_value() && !gave_up_) {
    // Tell the server why this worker leaves, so it does not wait for it.
    const std::string why = report_.signal != 0 ? "worker interrupted" : trained.message();
    (void)endpoint_->SendMessage(nullptr, proto::Error{why, true});
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
