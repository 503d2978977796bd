#include "dmlps/worker/worker.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <optional>
#include <thread>

#include "dmlps/data/dataset.h"
#include "dmlps/model/model.h"
#include "dmlps/net/endpoint.h"
#include "dmlps/proto/codec.h"

namespace dmlps::worker {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::microseconds;
using std::chrono::milliseconds;

constexpr milliseconds kPollSlice{100};

int64_t Micros(Clock::duration d) {
  return std::chrono::duration_cast<microseconds>(d).count();
}

Status CheckReadable(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return Status::NotFound(path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return Status::NotFound(path + ": not a regular file");
  return Status::Ok();
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

class WorkerRunner {
 public:
  WorkerRunner(const WorkerConfig& config, const std::atomic<int>* signal)
      : config_(config), signal_(signal) {}

  Result<WorkerReport> Run();

 private:
  Status Join();
  Status Prepare();
  Status Train();
  // Waits for a message of type `want` (or Stop), answering heartbeats and
  // logging the server's warnings, for at most `silence` without any message.
  Result<proto::Message> Await(proto::MsgType want, milliseconds silence);
  bool Interrupted();
  Status SleepInterruptibly(microseconds d);
  void NextBatch(std::vector<int64_t>* indices);

  const WorkerConfig& config_;
  const std::atomic<int>* signal_;
  zmq::context_t context_;
  std::optional<net::Endpoint> endpoint_;
  proto::Welcome welcome_;
  data::DataSpec data_spec_;
  data::Dataset shard_;
  std::optional<model::Model> model_;
  std::vector<int64_t> order_;
  size_t cursor_ = 0;
  std::mt19937_64 rng_;
  WorkerReport report_;
};

bool WorkerRunner::Interrupted() {
  if (signal_ != nullptr && signal_->load() != 0) report_.signal = signal_->load();
  return report_.signal != 0;
}

Result<proto::Message> WorkerRunner::Await(proto::MsgType want, milliseconds silence) {
  Clock::time_point deadline = Clock::now() + silence;
  net::Frames frames;
  while (true) {
    if (Interrupted()) return Status::Unavailable("interrupted");
    if (Clock::now() >= deadline) {
      return Status::Unavailable("no answer from the server at " + config_.server + " for " +
                                 std::to_string(silence.count() / 1000.0).substr(0, 4) + " s");
    }
    DMLPS_ASSIGN_OR_RETURN(bool got, endpoint_->Receive(&frames, kPollSlice));
    if (!got) continue;
    deadline = Clock::now() + silence;
    Result<proto::Message> message = proto::DecodeMessage(frames, 0);
    if (!message.ok()) return message.status().WithContext("bad message from the server");
    const proto::MsgType type = proto::TypeOf(message->body);
    if (type == want || type == proto::MsgType::kStop) return message;
    if (auto* error = std::get_if<proto::Error>(&message->body)) {
      if (error->fatal) return Status::Unavailable("the server refused this worker: " + error->message);
      spdlog::warn("the server says: {}", error->message);
    } else if (type != proto::MsgType::kHeartbeat) {
      spdlog::warn("ignoring an unexpected {} from the server", proto::MsgTypeName(type));
    }
  }
}

Status WorkerRunner::Prepare() {
  DMLPS_ASSIGN_OR_RETURN(data_spec_, data::ParseDataSpec(config_.data));
  // Fail before joining when the data is plainly missing: a server should not
  // wait for a worker that can never train.
  DMLPS_RETURN_IF_ERROR(CheckReadable(data_spec_.train_images));
  if (!data_spec_.train_labels.empty()) DMLPS_RETURN_IF_ERROR(CheckReadable(data_spec_.train_labels));
  return Status::Ok();
}

Status WorkerRunner::Join() {
  DMLPS_ASSIGN_OR_RETURN(net::Endpoint endpoint, net::Endpoint::Connect(context_, config_.server));
  endpoint_.emplace(std::move(endpoint));
  proto::Hello hello{config_.rank, HostName(), static_cast<int64_t>(getpid()), config_.threads};
  DMLPS_RETURN_IF_ERROR(endpoint_->SendMessage(nullptr, hello));
  Result<proto::Message> reply = Await(proto::MsgType::kWelcome, config_.connect_timeout);
  if (!reply.ok()) {
    if (report_.signal != 0) return reply.status();
    if (reply.status().code() == StatusCode::kUnavailable &&
        reply.status().message().starts_with("no answer")) {
      return Status::Unavailable("no server answered at " + config_.server + " within " +
                                 std::to_string(config_.connect_timeout.count() / 1000) + " s");
    }
    return reply.status();
  }
  if (auto* stop = std::get_if<proto::Stop>(&reply->body)) {
    return Status::Unavailable("the server stopped before this worker joined: " + stop->reason);
  }
  welcome_ = std::get<proto::Welcome>(reply->body);
  report_.rank = welcome_.rank;
  return Status::Ok();
}

void WorkerRunner::NextBatch(std::vector<int64_t>* indices) {
  indices->clear();
  const int64_t want = std::min<int64_t>(welcome_.batch, shard_.rows());
  while (static_cast<int64_t>(indices->size()) < want) {
    if (cursor_ >= order_.size()) {
      std::shuffle(order_.begin(), order_.end(), rng_);  // a new epoch over the shard
      cursor_ = 0;
    }
    indices->push_back(order_[cursor_++]);
  }
}

Status WorkerRunner::SleepInterruptibly(microseconds d) {
  const Clock::time_point until = Clock::now() + d;
  while (Clock::now() < until) {
    if (Interrupted()) return Status::Unavailable("interrupted");
    std::this_thread::sleep_for(std::min<Clock::duration>(until - Clock::now(), kPollSlice));
  }
  return Status::Ok();
}

Status WorkerRunner::Train() {
  const data::Shard shard{welcome_.shard_index, welcome_.shard_count};
  if (shard.count < 1 || shard.index < 0 || shard.index >= shard.count || welcome_.batch < 1) {
    return Status::Protocol("the server sent an impossible shard or batch size");
  }
  DMLPS_ASSIGN_OR_RETURN(shard_, data::LoadTrain(data_spec_, shard));
  DMLPS_RETURN_IF_ERROR(shard_.ConformTo(welcome_.input_dim, welcome_.classes)
                            .WithContext(config_.data + " does not fit the server's model"));
  if (shard_.rows() == 0) return Status::DataLoss(config_.data + ": this worker's shard is empty");
  DMLPS_ASSIGN_OR_RETURN(model::ModelSpec spec, model::ParseModelSpec(welcome_.model,
                                                                       welcome_.input_dim,
                                                                       welcome_.classes));
  model_.emplace(spec);
  if (model_->num_params() != welcome_.num_params) {
    return Status::Protocol("the server's model has " + std::to_string(welcome_.num_params) +
                            " parameters, " + spec.Name() + " here has " +
                            std::to_string(model_->num_params()));
  }
  spdlog::info("worker {} of {}: policy {}, model {}, shard {}/{} with {} samples, batch {}",
               welcome_.rank, welcome_.num_workers, welcome_.policy, spec.Name(), shard.index,
               shard.count, shard_.rows(), welcome_.batch);

  order_.resize(shard_.rows());
  std::iota(order_.begin(), order_.end(), 0);
  rng_.seed(welcome_.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(welcome_.rank));
  cursor_ = order_.size();  // shuffle before the first batch
  StragglerEmulator straggler(config_.slowdown, config_.delay_prob,
                              milliseconds(config_.delay_ms), rng_());

  std::vector<float> params(model_->num_params());
  auto gradient = std::make_shared<std::vector<float>>(params.size());
  std::vector<int64_t> indices;
  Eigen::MatrixXf x;
  std::vector<int32_t> y;
  const Clock::time_point start = Clock::now();

  for (int64_t clock = 0;; ++clock) {
    const Clock::time_point pull_sent = Clock::now();
    DMLPS_RETURN_IF_ERROR(endpoint_->SendMessage(nullptr, proto::Pull{clock}));
    DMLPS_ASSIGN_OR_RETURN(proto::Message reply,
                           Await(proto::MsgType::kModel, config_.server_timeout));
    if (auto* stop = std::get_if<proto::Stop>(&reply.body)) {
      report_.stop_reason = stop->reason;
      break;
    }
    const Clock::time_point got_model = Clock::now();
    const auto& header = std::get<proto::Model>(reply.body);
    if (header.num_params != model_->num_params()) {
      return Status::Protocol("the server sent a model of " + std::to_string(header.num_params) +
                              " parameters, expected " + std::to_string(model_->num_params()));
    }
    DMLPS_ASSIGN_OR_RETURN(proto::TensorView view,
                           proto::TensorView::Make(reply.payload, header.num_params));
    view.CopyTo(params);

    NextBatch(&indices);
    shard_.Gather(indices, &x, &y);
    // ZeroMQ may still hold the last gradient; only then write a fresh buffer.
    if (gradient.use_count() > 1) gradient = std::make_shared<std::vector<float>>(params.size());
    const Clock::time_point compute_start = Clock::now();
    const double loss = model_->LossAndGradient(params, x, y, *gradient);
    const microseconds compute(Micros(Clock::now() - compute_start));
    const microseconds straggle = straggler.ExtraDelay(compute);
    if (straggle.count() > 0) DMLPS_RETURN_IF_ERROR(SleepInterruptibly(straggle));

    proto::Push push;
    push.clock = clock;
    push.base_version = header.version;
    push.batch = welcome_.batch;
    push.samples = static_cast<int64_t>(indices.size());
    push.num_params = model_->num_params();
    push.loss = loss;
    push.compute_us = compute.count();
    push.straggle_us = straggle.count();
    push.wait_us = Micros(got_model - pull_sent);
    net::Frames payload;
    proto::AppendTensor(gradient, proto::kDefaultChunkBytes, &payload);
    DMLPS_RETURN_IF_ERROR(endpoint_->SendMessage(nullptr, push, std::move(payload)));

    ++report_.steps;
    report_.samples += push.samples;
    report_.compute_s += compute.count() * 1e-6;
    report_.straggle_s += straggle.count() * 1e-6;
    report_.wait_s += push.wait_us * 1e-6;
    if (!std::isfinite(loss)) spdlog::warn("step {}: the training loss is {}", clock, loss);
  }
  report_.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return Status::Ok();
}

Result<WorkerReport> WorkerRunner::Run() {
  Eigen::setNbThreads(static_cast<int>(config_.threads));
  DMLPS_RETURN_IF_ERROR(Prepare());
  Status joined = Join();
  if (report_.signal != 0) return report_;
  DMLPS_RETURN_IF_ERROR(joined);
  Status trained = Train();
  if (!trained.ok() && endpoint_.has_value()) {
    // Tell the server why this worker leaves, so it does not wait for it.
    const std::string why = report_.signal != 0 ? "worker interrupted" : trained.message();
    (void)endpoint_->SendMessage(nullptr, proto::Error{why, true});
  }
  if (report_.signal != 0) return report_;
  DMLPS_RETURN_IF_ERROR(trained);
  spdlog::info("stopped by the server ({}): {} steps, {} samples; compute {:.1f} s, "
               "straggle {:.1f} s, wait {:.1f} s of {:.1f} s",
               report_.stop_reason, report_.steps, report_.samples, report_.compute_s,
               report_.straggle_s, report_.wait_s, report_.seconds);
  return report_;
}

}  // namespace

microseconds StragglerEmulator::ExtraDelay(microseconds compute) {
  double extra_us = 0;
  if (slowdown_ > 1) extra_us += (slowdown_ - 1) * static_cast<double>(compute.count());
  if (delay_prob_ > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < delay_prob_) {
    extra_us += static_cast<double>(delay_.count());
  }
  return microseconds(static_cast<int64_t>(std::llround(extra_us)));
}

std::vector<std::string> ValidateConfig(const WorkerConfig& config) {
  std::vector<std::string> problems;
  if (config.rank < -1) problems.push_back("--rank must not be negative");
  if (config.threads < 1 || config.threads > 1024) problems.push_back("--threads must be in 1..1024");
  if (!(config.slowdown >= 1) || !std::isfinite(config.slowdown)) {
    problems.push_back("--slowdown must be a number of at least 1");
  }
  if (!(config.delay_prob >= 0 && config.delay_prob <= 1)) {
    problems.push_back("--delay-prob must be in [0, 1]");
  }
  if (config.delay_ms < 0) problems.push_back("--delay-ms must not be negative");
  if (config.delay_prob > 0 && config.delay_ms == 0) {
    problems.push_back("--delay-prob needs --delay-ms");
  }
  if (config.connect_timeout.count() <= 0) problems.push_back("--connect-timeout must be positive");
  if (config.server_timeout.count() <= 0) problems.push_back("--server-timeout must be positive");
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
