#include "dmlps/bench/transport.h"

#include <spdlog/fmt/fmt.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <zmq.hpp>

#include "dmlps/base/json.h"
#include "dmlps/net/curve.h"
#include "dmlps/net/endpoint.h"
#include "dmlps/optim/optimizer.h"
#include "dmlps/server/model_store.h"
#include "dmlps/server/server.h"
#include "dmlps/sync/driver.h"
#include "dmlps/sync/policy.h"
#include "server/intake.h"

namespace dmlps::bench {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How long one wait lasts before it looks at the stop flags again.
constexpr milliseconds kSlice{20};
// The bench server's learning rate: small, so that the model stays finite
// however many rounds run.
constexpr double kLearningRate = 1e-6;
constexpr float kGradientValue = 1e-3f;
// Turns the rounds of each measurement are taken in.
constexpr int64_t kTurns = 3;

// Names the calling thread, for top and perf (at most 15 characters).
void NameThread(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

double Millis(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// What the threads of one measurement share: when to stop, and the first
// error any of them met.
class Shared {
 public:
  explicit Shared(const std::atomic<int>* signal) : signal_(signal) {}

  bool Stopping() const { return failed_.load() || (signal_ != nullptr && signal_->load() != 0); }
  // Why the threads stop: the first error, or the signal.
  Status Reason() {
    std::lock_guard lock(mutex_);
    if (!error_.ok()) return error_;
    return Status::Unavailable("interrupted");
  }
  void Fail(const Status& status) {
    std::lock_guard lock(mutex_);
    if (error_.ok()) error_ = status;
    failed_ = true;
  }

 private:
  const std::atomic<int>* signal_;
  std::atomic<bool> failed_{false};
  std::mutex mutex_;
  Status error_;
};

// Joins its threads on every path out of a scope, after telling them to quit.
class Threads {
 public:
  ~Threads() { JoinAll(); }
  void Start(std::function<void()> body) { threads_.emplace_back(std::move(body)); }
  void JoinAll() {
    quit_ = true;
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
    threads_.clear();
  }
  bool quitting() const { return quit_.load(); }
  // For threads that wait for others: only the second group quits.
  const std::atomic<bool>& quit_flag() const { return quit_; }

 private:
  std::vector<std::thread> threads_;
  std::atomic<bool> quit_{false};
};

// A private folder for the ipc sockets, removed with everything in it.
class TempDir {
 public:
  static Result<TempDir> Make() {
    const char* base = std::getenv("TMPDIR");
    std::string root = base != nullptr && *base != '\0' ? base : "/tmp";
    // ipc socket paths must stay short (about 100 bytes).
    if (root.size() > 60) root = "/tmp";
    std::string pattern = root + "/dmlps-bench.XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      return Status::IOError("cannot make a folder in " + root + ": " + std::strerror(errno));
    }
    TempDir dir;
    dir.path_ = pattern;
    return dir;
  }
  TempDir() = default;
  TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir() {
    if (path_.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

Status FromZmq(const zmq::error_t& e, const std::string& what) {
  return Status::IOError(what + ": " + e.what());
}

void ConfigureRaw(zmq::socket_t& socket) {
  socket.set(zmq::sockopt::linger, 0);
  socket.set(zmq::sockopt::sndhwm, 100000);
  socket.set(zmq::sockopt::rcvhwm, 100000);
  socket.set(zmq::sockopt::maxmsgsize, net::kMaxFrameBytes);
}

// Waits for one frame on a raw socket for at most `timeout`, looking at the
// stop flags every slice.
Status ReceiveRaw(zmq::socket_t& socket, zmq::message_t* frame, milliseconds timeout,
                  Shared& shared, const std::atomic<bool>* quit) {
  const Clock::time_point deadline = Clock::now() + timeout;
  while (true) {
    if (shared.Stopping() || (quit != nullptr && quit->load())) return shared.Reason();
    if (Clock::now() >= deadline) {
      return Status::Unavailable(fmt::format("no answer from the echo for {:g} s",
                                             timeout.count() / 1000.0));
    }
    zmq_pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
    const int rc = zmq_poll(&item, 1, static_cast<long>(kSlice.count()));
    if (rc < 0 && zmq_errno() != EINTR) {
      return Status::IOError(std::string("poll failed: ") + zmq_strerror(zmq_errno()));
    }
    if (rc <= 0) continue;
    if (socket.recv(*frame, zmq::recv_flags::dontwait)) return Status::Ok();
  }
}

// Raw ZeroMQ ping-pong: a DEALER sends the payload in `pieces` messages
// (without copying) to a DEALER that echoes each message as it arrives; a
// round ends when every piece is back.
Result<std::vector<double>> RawPingPong(const std::string& bind_address, int64_t bytes,
                                        int64_t pieces, const TransportConfig& config,
                                        Shared& shared) {
  try {
    zmq::context_t pong_context(1);
    zmq::context_t ping_context(1);
    zmq::socket_t pong(pong_context, zmq::socket_type::dealer);
    ConfigureRaw(pong);
    pong.bind(bind_address);
    const std::string address = pong.get(zmq::sockopt::last_endpoint);
    zmq::socket_t ping(ping_context, zmq::socket_type::dealer);
    ConfigureRaw(ping);
    ping.connect(address);

    const int64_t total = (config.warmup + config.rounds) * pieces;
    Threads threads;
    threads.Start([&] {
      NameThread("bench-echo");
      try {
        for (int64_t i = 0; i < total; ++i) {
          zmq::message_t frame;
          Status got = ReceiveRaw(pong, &frame, config.timeout, shared, &threads.quit_flag());
          if (!got.ok()) {
            if (!threads.quitting()) shared.Fail(got);
            return;
          }
          if (!pong.send(frame, zmq::send_flags::dontwait)) {
            shared.Fail(Status::Unavailable("the echo's send queue is full"));
            return;
          }
        }
      } catch (const zmq::error_t& e) {
        shared.Fail(FromZmq(e, "echo"));
      }
    });

    std::vector<char> payload(static_cast<size_t>(bytes), 1);
    const int64_t piece_bytes = (bytes + pieces - 1) / pieces;
    std::vector<double> times;
    for (int64_t round = 0; round < config.warmup + config.rounds; ++round) {
      const Clock::time_point start = Clock::now();
      for (int64_t offset = 0; offset < bytes; offset += piece_bytes) {
        const size_t n = static_cast<size_t>(std::min(piece_bytes, bytes - offset));
        // Zero-copy with no free function: the payload outlives the sockets.
        zmq::message_t frame(payload.data() + offset, n, nullptr, nullptr);
        if (!ping.send(frame, zmq::send_flags::dontwait)) {
          return Status::Unavailable("the ping's send queue is full");
        }
      }
      for (int64_t p = 0; p < pieces; ++p) {
        zmq::message_t frame;
        DMLPS_RETURN_IF_ERROR(ReceiveRaw(ping, &frame, config.timeout, shared, nullptr));
      }
      if (round >= config.warmup) times.push_back(Millis(Clock::now() - start));
    }
    threads.JoinAll();
    if (shared.Stopping()) return shared.Reason();
    return times;
  } catch (const zmq::error_t& e) {
    return FromZmq(e, "raw ZeroMQ on " + bind_address);
  }
}

// Waits for a message of type `want` from the bench server, for at most
// the timeout; an Error from it ends the wait.
Result<proto::Message> AwaitFromServer(net::Endpoint& endpoint, proto::MsgType want,
                                       const TransportConfig& config, Shared& shared) {
  const Clock::time_point deadline = Clock::now() + config.timeout;
  net::Frames frames;
  while (true) {
    if (shared.Stopping()) return shared.Reason();
    if (Clock::now() >= deadline) {
      return Status::Unavailable(fmt::format("no {} from the bench server for {:g} s",
                                             proto::MsgTypeName(want),
                                             config.timeout.count() / 1000.0));
    }
    DMLPS_ASSIGN_OR_RETURN(bool got, endpoint.Receive(&frames, kSlice));
    if (!got) continue;
    DMLPS_ASSIGN_OR_RETURN(proto::Message message, proto::DecodeMessage(frames, 0));
    if (auto* error = std::get_if<proto::Error>(&message.body)) {
      return Status::Protocol("the bench server says: " + error->message);
    }
    if (proto::TypeOf(message.body) == want) return message;
  }
}

// A worker's side of the round trips, as dmlps-worker does it: Push (the
// gradient, streamed when larger than a chunk, with the next Pull right
// after its header), then the Model, copied into its parameters chunk by
// chunk as it arrives. With server shards (`addresses` and `bounds`, where
// each shard's slice begins, plus the end), as dmlps-worker does with
// sharded servers: each shard gets its slice of the gradient without
// copying, shard 0's last, and the model is assembled from the slices, shard
// 0's first; shards 1 and up are reached through `shard_context`. Unlike
// dmlps-server's shards, which take their orders from shard 0, each bench
// shard runs BSP over its slice on its own, so each gets the next Pull.
Status RunBenchWorker(zmq::context_t& context, zmq::context_t* shard_context,
                      const std::vector<std::string>& addresses,
                      const std::vector<int64_t>& bounds, const net::ConnectOptions& keys,
                      int64_t rank, const TransportConfig& config, Shared& shared,
                      std::vector<double>* times) {
  const size_t shards = addresses.size();
  if (shards == 0 || bounds.size() != shards + 1) return Status::Internal("bad bench shards");
  const int64_t floats = bounds.back();
  std::vector<net::Endpoint> endpoints;
  endpoints.reserve(shards);
  for (size_t k = 0; k < shards; ++k) {
    zmq::context_t& own = k == 0 || shard_context == nullptr ? context : *shard_context;
    DMLPS_ASSIGN_OR_RETURN(net::Endpoint endpoint, net::Endpoint::Connect(own, addresses[k], keys));
    DMLPS_RETURN_IF_ERROR(endpoint.SendMessage(
        nullptr,
        proto::Hello{rank, "dmlps-bench", static_cast<int64_t>(getpid()), 1, 0, -1, 0, {}}));
    endpoints.push_back(std::move(endpoint));
  }
  auto gradient = std::make_shared<const std::vector<float>>(static_cast<size_t>(floats),
                                                             kGradientValue);
  std::vector<float> params(static_cast<size_t>(floats));
  int64_t version = 0;
  // Shard k's slice of the model, into its place in params; its version.
  auto receive_slice = [&](size_t k) -> Result<int64_t> {
    const int64_t begin = bounds[k];
    const int64_t count = bounds[k + 1] - begin;
    DMLPS_ASSIGN_OR_RETURN(proto::Message reply,
                           AwaitFromServer(endpoints[k], proto::MsgType::kModel, config, shared));
    const auto& header = std::get<proto::Model>(reply.body);
    if (header.num_params != count) {
      return Status::Protocol("a model of " + std::to_string(header.num_params) + " floats");
    }
    const std::span<float> out(params.data() + begin, static_cast<size_t>(count));
    DMLPS_ASSIGN_OR_RETURN(proto::IncomingTensor model,
                           proto::IncomingTensor::Open(header.num_params, header.chunks,
                                                       header.chunk_floats,
                                                       std::move(reply.payload)));
    model.CopyTo(0, model.received(), out);
    while (!model.complete()) {
      DMLPS_ASSIGN_OR_RETURN(proto::Message piece, AwaitFromServer(endpoints[k],
                                                                   proto::MsgType::kChunk,
                                                                   config, shared));
      const int64_t from = model.received();
      DMLPS_RETURN_IF_ERROR(model.Add(std::get<proto::Chunk>(piece.body).index, piece.payload));
      model.CopyTo(from, model.received(), out);
      model.Release(from, model.received());
    }
    return header.version;
  };
  auto receive_model = [&]() -> Status {
    DMLPS_ASSIGN_OR_RETURN(int64_t first, receive_slice(0));
    for (size_t k = 1; k < shards; ++k) {
      DMLPS_ASSIGN_OR_RETURN(int64_t other, receive_slice(k));
      if (other != first) {
        return Status::Protocol("bench shard " + std::to_string(k) + " sent version " +
                                std::to_string(other) + ", shard 0 version " +
                                std::to_string(first));
      }
    }
    version = first;
    return Status::Ok();
  };
  for (net::Endpoint& endpoint : endpoints) {
    DMLPS_RETURN_IF_ERROR(endpoint.SendMessage(nullptr, proto::Pull{0}));
  }
  DMLPS_RETURN_IF_ERROR(receive_model());
  for (int64_t round = 0; round < config.warmup + config.rounds; ++round) {
    const Clock::time_point start = Clock::now();
    proto::Push push;
    push.clock = round;
    push.base_version = version;
    push.batch = 1;
    push.samples = 1;
    // As dmlps-worker: the next Pull right after the push's header.
    const proto::Body pull = proto::Pull{round + 1};
    for (size_t i = 1; i <= shards; ++i) {
      const size_t k = i % shards;  // 1, 2, ..., then 0
      push.num_params = bounds[k + 1] - bounds[k];
      DMLPS_RETURN_IF_ERROR(endpoints[k].SendWithPayload(nullptr, push, gradient, bounds[k],
                                                         push.num_params, config.chunk_bytes,
                                                         &pull));
    }
    DMLPS_RETURN_IF_ERROR(receive_model());
    if (round >= config.warmup) times->push_back(Millis(Clock::now() - start));
  }
  if (!std::all_of(params.begin(), params.end(), [](float v) { return std::isfinite(v); })) {
    return Status::Internal("the bench model is no longer finite");
  }
  // Every parameter went through the same updates, in whichever slice: a
  // slice lost or put in the wrong place shows as a value apart.
  const float first = params.front();
  if (!(first < 0) || !std::all_of(params.begin(), params.end(), [first](float v) {
        return std::abs(v - first) <= 1e-4f * std::abs(first);
      })) {
    return Status::Internal("the bench model's parameters differ after the same updates");
  }
  return Status::Ok();
}

// The server's side, as dmlps-server does it with the BSP policy: pushes are
// opened as IncomingTensors (whole, or chunk by chunk), summed, applied and
// answered through the ModelStore, the model streaming back chunk by chunk.
// The policy's actions come through the driver, as dmlps-server's do.
class BenchServer : private sync::DriverSink<std::shared_ptr<proto::IncomingTensor>> {
 public:
  BenchServer(net::Endpoint& endpoint, int64_t floats, int64_t workers,
              const TransportConfig& config, Shared& shared)
      : endpoint_(endpoint),
        workers_(workers),
        config_(config),
        shared_(shared),
        store_(std::vector<float>(static_cast<size_t>(floats), 0.f),
               config.chunk_bytes / static_cast<int64_t>(sizeof(float))),
        peers_(static_cast<size_t>(workers)) {}

  Status Run(const std::atomic<bool>& quit) {
    sync::PolicyConfig policy_config;
    policy_config.name = "bsp";
    policy_config.num_workers = workers_;
    policy_config.batch = 1;
    DMLPS_ASSIGN_OR_RETURN(std::unique_ptr<sync::Policy> policy, sync::MakePolicy(policy_config));
    driver_.emplace(std::move(policy), sync::DriverOptions{}, static_cast<Sink&>(*this));
    DMLPS_ASSIGN_OR_RETURN(optimizer_, optim::MakeOptimizer(kLearningRate, 0, store_.size()));
    net::Frames frames;
    while (!quit.load() && !shared_.Stopping()) {
      DMLPS_ASSIGN_OR_RETURN(bool got, endpoint_.Receive(&frames, kSlice));
      if (!got) continue;
      DMLPS_RETURN_IF_ERROR(Handle(frames));
    }
    return Status::Ok();
  }

 private:
  using Gradient = std::shared_ptr<proto::IncomingTensor>;
  using Sink = sync::DriverSink<Gradient>;
  struct Peer {
    zmq::message_t identity;
  };

  Status Handle(net::Frames& frames) {
    if (frames.size() < 2) return Status::Protocol("an empty message");
    const std::string key(static_cast<const char*>(frames[0].data()), frames[0].size());
    DMLPS_ASSIGN_OR_RETURN(proto::Message message, proto::DecodeMessage(frames, 1));
    if (auto* hello = std::get_if<proto::Hello>(&message.body)) {
      if (hello->rank < 0 || hello->rank >= workers_ || rank_of_.count(key) > 0) {
        return Status::Protocol("a Hello with rank " + std::to_string(hello->rank));
      }
      peers_[static_cast<size_t>(hello->rank)].identity = net::CopyFrame(frames[0]);
      rank_of_[key] = hello->rank;
      driver_->Attach(hello->rank, {});
      return Status::Ok();
    }
    auto it = rank_of_.find(key);
    if (it == rank_of_.end()) return Status::Protocol("a message before Hello");
    const int64_t rank = it->second;
    if (std::holds_alternative<proto::Pull>(message.body)) {
      driver_->Pull(rank);
      // As dmlps-server: the first pulls are answered once every worker is in.
      if (!driver_->started() && static_cast<int64_t>(rank_of_.size()) == workers_) {
        bool all_pulled = true;
        for (int64_t w = 0; w < workers_; ++w) all_pulled = all_pulled && driver_->pull_pending(w);
        if (all_pulled) driver_->Start();
      }
      return TakeError();
    }
    if (auto* push = std::get_if<proto::Push>(&message.body)) {
      server::OpenedPush opened =
          server::OpenPush(*push, store_.size(), "the bench server", message.payload);
      switch (opened.fault) {
        case server::OpenedPush::kNone:
          break;
        case server::OpenedPush::kSize:
          return Status::Protocol("a push of " + std::to_string(push->num_params) + " floats");
        case server::OpenedPush::kLayout:
          return Status::Protocol(opened.why);
        case server::OpenedPush::kNonFinite:
          return Status::Protocol("a gradient with NaN or infinite values");
      }
      Gradient gradient = std::move(opened.tensor);
      streams_.Follow(rank, gradient, push->clock);
      sync::PushInfo info;
      info.clock = push->clock;
      info.base_version = push->base_version;
      info.samples = push->samples;
      info.batch = push->batch;
      driver_->Push(rank, info, gradient);
      return TakeError();
    }
    if (auto* chunk = std::get_if<proto::Chunk>(&message.body)) {
      const server::PushStreams::Taken taken = streams_.Take(rank, chunk->index, message.payload);
      switch (taken.verdict) {
        case server::PushStreams::Verdict::kTaken:
          break;
        case server::PushStreams::Verdict::kNoStream:
          return Status::Protocol("a Chunk without a streamed push");
        case server::PushStreams::Verdict::kBroken:
          return taken.error;
        case server::PushStreams::Verdict::kNonFinite:
          return Status::Protocol("a gradient chunk with NaN or infinite values");
      }
      store_.Advance();
      return Status::Ok();
    }
    return Status::Protocol("an unexpected " +
                            std::string(proto::MsgTypeName(proto::TypeOf(message.body))));
  }

  // The first error the sink met since the last call, which clears it.
  Status TakeError() {
    Status error = std::move(error_);
    error_ = Status::Ok();
    return error;
  }
  void Fail(Status status) {
    if (error_.ok()) error_ = std::move(status);
  }

  // The driver's sink: BSP stages, applies and answers pulls, nothing more.
  void Stage(const sync::HandledPush<Gradient>& push, double weight) override {
    if (push.payload != nullptr) store_.Stage(push.payload, static_cast<float>(weight));
  }
  void Apply(double scale, bool with_optimizer) override {
    if (!with_optimizer) return Fail(Unexpected());
    store_.Apply(optimizer_.get(), static_cast<float>(scale));
  }
  void SendModel(int64_t w, const sync::Reply& reply) override {
    proto::Model header;
    header.version = reply.version;
    server::QueueModelReply(store_, endpoint_, &peers_[static_cast<size_t>(w)].identity, header,
                            "bench worker " + std::to_string(w));
  }
  void SendContinue(int64_t, bool, const sync::Reply&) override { Fail(Unexpected()); }
  void SendSyncNow(int64_t, int64_t) override { Fail(Unexpected()); }
  void Dropped(int64_t, const sync::Drop& drop) override {
    Fail(Status::Internal("the BSP policy dropped a push: " + drop.reason));
  }
  void Evaluate(bool) override {}
  static Status Unexpected() {
    return Status::Internal("the BSP policy asked for something a bench server cannot do");
  }

  net::Endpoint& endpoint_;
  const int64_t workers_;
  const TransportConfig& config_;
  Shared& shared_;
  server::ModelStore store_;
  std::optional<sync::PolicyDriver<Gradient>> driver_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::vector<Peer> peers_;
  server::PushStreams streams_;  // the pushes whose chunks are still coming, by rank
  std::map<std::string, int64_t> rank_of_;
  Status error_;
};

// dmlps round trips with one server per address in `bind_addresses` (the
// model cut over them as server::ShardBounds cuts it) and `workers`
// workers, each server and each worker with a ZeroMQ context of its own as
// separate processes would have (a worker's shards 1 and up on a second
// one, as dmlps-worker's). A round's time is that of its slowest worker.
// With `curve`, every connection is encrypted and the servers admit the
// workers' keys only.
Result<std::vector<double>> DmlpsRoundTrips(const std::vector<std::string>& bind_addresses,
                                            int64_t bytes, int64_t workers, bool curve,
                                            const TransportConfig& config, Shared& shared) {
  const int64_t floats = bytes / static_cast<int64_t>(sizeof(float));
  const auto shards = static_cast<int64_t>(bind_addresses.size());
  const std::vector<int64_t> bounds = server::ShardBounds(floats, shards);
  std::vector<std::unique_ptr<zmq::context_t>> server_contexts;
  for (int64_t k = 0; k < shards; ++k) {
    server_contexts.push_back(std::make_unique<zmq::context_t>(1));
  }
  std::vector<std::unique_ptr<zmq::context_t>> worker_contexts;
  std::vector<std::unique_ptr<zmq::context_t>> shard_contexts;
  for (int64_t w = 0; w < workers; ++w) {
    worker_contexts.push_back(std::make_unique<zmq::context_t>(1));
    if (shards > 1) {
      // As dmlps-worker: I/O threads of their own for the other shards.
      shard_contexts.push_back(
          std::make_unique<zmq::context_t>(static_cast<int>(std::min<int64_t>(shards - 1, 4))));
    }
  }
  net::BindOptions bind_options;
  std::vector<net::ConnectOptions> keys(static_cast<size_t>(workers));
  if (curve) {
    DMLPS_ASSIGN_OR_RETURN(net::CurveKeyPair server_pair, net::GenerateKeyPair());
    bind_options.curve_secret = server_pair.secret_key;
    for (net::ConnectOptions& k : keys) {
      DMLPS_ASSIGN_OR_RETURN(net::CurveKeyPair pair, net::GenerateKeyPair());
      bind_options.allowed_keys.insert(pair.public_key);
      k = {pair.secret_key, server_pair.public_key};
    }
  }
  std::vector<net::Endpoint> endpoints;
  std::vector<std::string> addresses;
  endpoints.reserve(static_cast<size_t>(shards));
  for (int64_t k = 0; k < shards; ++k) {
    DMLPS_ASSIGN_OR_RETURN(net::Endpoint endpoint,
                           net::Endpoint::Bind(*server_contexts[static_cast<size_t>(k)],
                                               bind_addresses[static_cast<size_t>(k)],
                                               bind_options));
    addresses.push_back(endpoint.address());
    endpoints.push_back(std::move(endpoint));
  }
  std::vector<std::vector<double>> times(static_cast<size_t>(workers));
  {
    std::vector<std::unique_ptr<BenchServer>> servers;
    for (int64_t k = 0; k < shards; ++k) {
      const auto i = static_cast<size_t>(k);
      servers.push_back(std::make_unique<BenchServer>(endpoints[i], bounds[i + 1] - bounds[i],
                                                      workers, config, shared));
    }
    Threads server_threads;
    for (int64_t k = 0; k < shards; ++k) {
      server_threads.Start([&, k] {
        NameThread(shards == 1 ? std::string("bench-server") : "bench-shard" + std::to_string(k));
        Status served = servers[static_cast<size_t>(k)]->Run(server_threads.quit_flag());
        if (!served.ok()) {
          shared.Fail(served.WithContext(shards == 1 ? std::string("bench server")
                                                    : "bench server shard " + std::to_string(k)));
        }
      });
    }
    {
      Threads worker_threads;
      for (int64_t w = 0; w < workers; ++w) {
        worker_threads.Start([&, w] {
          const auto i = static_cast<size_t>(w);
          NameThread("bench-worker" + std::to_string(w));
          Status done = RunBenchWorker(*worker_contexts[i],
                                       shards > 1 ? shard_contexts[i].get() : nullptr, addresses,
                                       bounds, keys[i], w, config, shared, &times[i]);
          if (!done.ok()) shared.Fail(done.WithContext("bench worker " + std::to_string(w)));
        });
      }
      worker_threads.JoinAll();
    }
    server_threads.JoinAll();
  }
  if (shared.Stopping()) return shared.Reason();
  std::vector<double> rounds(static_cast<size_t>(config.rounds), 0.0);
  for (const std::vector<double>& t : times) {
    if (t.size() != rounds.size()) return Status::Internal("a bench worker missed rounds");
    for (size_t r = 0; r < t.size(); ++r) rounds[r] = std::max(rounds[r], t[r]);
  }
  return rounds;
}

// memcpy of the payload between two buffers already touched.
std::vector<double> MemcpyTimes(int64_t bytes, const TransportConfig& config) {
  std::vector<char> from(static_cast<size_t>(bytes), 1);
  std::vector<char> to(static_cast<size_t>(bytes), 0);
  std::vector<double> times;
  for (int64_t round = 0; round < config.warmup + config.rounds; ++round) {
    const Clock::time_point start = Clock::now();
    std::memcpy(to.data(), from.data(), from.size());
    if (round >= config.warmup) times.push_back(Millis(Clock::now() - start));
  }
  return times;
}

// The server's staging sum: one gradient of the payload, whole, staged into
// the ModelStore's accumulator (acc += w * g, lane by lane) on `threads`
// threads.
Result<std::vector<double>> SumTimes(int64_t bytes, int64_t threads,
                                     const TransportConfig& config) {
  const int64_t floats = bytes / static_cast<int64_t>(sizeof(float));
  server::ModelStore store(std::vector<float>(static_cast<size_t>(floats), 0.f),
                           config.chunk_bytes / static_cast<int64_t>(sizeof(float)), threads);
  auto values = std::make_shared<const std::vector<float>>(static_cast<size_t>(floats),
                                                           kGradientValue);
  net::Frames frames;
  proto::AppendRange(values, 0, floats, &frames);
  DMLPS_ASSIGN_OR_RETURN(proto::IncomingTensor opened,
                         proto::IncomingTensor::Open(floats, 0, 0, std::move(frames)));
  auto gradient = std::make_shared<proto::IncomingTensor>(std::move(opened));
  std::vector<double> times;
  for (int64_t round = 0; round < config.warmup + config.rounds; ++round) {
    const Clock::time_point start = Clock::now();
    store.Stage(gradient, 0.5f);
    if (round >= config.warmup) times.push_back(Millis(Clock::now() - start));
  }
  if (store.pending() != 0) return Status::Internal("the staging sum did not run at once");
  return times;
}

TransportRow MakeRow(std::string transport, int64_t bytes, std::string what, int64_t workers,
                     int64_t threads, const std::vector<double>& times) {
  TransportRow row;
  row.transport = std::move(transport);
  row.bytes = bytes;
  row.what = std::move(what);
  row.workers = workers;
  row.threads = threads;
  row.ms = SpreadOf(times);
  const double seconds = row.ms.median / 1000.0;
  row.gbps = seconds > 0 ? static_cast<double>(BytesMoved(row)) / seconds / 1e9 : 0;
  return row;
}

std::string Fixed(double value, int digits) { return fmt::format("{:.{}f}", value, digits); }

std::string Ratio(const std::optional<double>& r) {
  return r.has_value() ? Fixed(*r, 2) + "x" : std::string("-");
}

std::string Title(const TransportConfig& c) {
  std::string sizes;
  for (int64_t s : c.sizes) sizes += (sizes.empty() ? "" : ",") + FormatByteSize(s);
  std::string transports;
  for (const std::string& t : c.transports) transports += (transports.empty() ? "" : ",") + t;
  std::string workers;
  for (int64_t w : c.workers) workers += (workers.empty() ? "" : ",") + std::to_string(w);
  std::string title = fmt::format("dmlps-bench transport: payloads {} over {}", sizes, transports);
  if (!c.sharded_only) {
    std::string threads;
    for (int64_t t : c.sum_threads) {
      if (!threads.empty()) threads += ',';
      threads += std::to_string(t);
    }
    title += fmt::format("; dmlps with 1 server and {} workers (bsp, sgd); sums on {} threads",
                         workers, threads);
  }
  if (!c.shards.empty()) {
    std::string shards;
    for (int64_t k : c.shards) {
      if (!shards.empty()) shards += ',';
      shards += std::to_string(k);
    }
    title += fmt::format("; dmlps-sharded with {} server shards and {} workers", shards,
                         c.shard_workers);
  }
  title += fmt::format("; chunks of {}; median of {} rounds in {} turns, each after {} warm-up",
                       FormatByteSize(c.chunk_bytes), c.rounds, std::min(c.rounds, kTurns),
                       c.warmup);
  return title;
}

std::string GoalLine(const TransportGoal& g) {
  return fmt::format("goal: {}: {} {:.2f}x ({} {:.2f}x): {}", g.goal, g.transport, g.value,
                     g.met ? "<=" : ">", g.limit, g.met ? "met" : "not met");
}

void WriteTable(const TransportReport& report, std::ostream& out) {
  // The shards column and the speedup only when sharded rows are measured.
  bool sharded = false;
  for (const TransportRow& r : report.rows) sharded = sharded || r.shards > 0;
  std::vector<std::string> header = {"transport", "size",   "what",   "workers",
                                     "threads",   "median ms", "min ms", "max ms",
                                     "GB/s",      "vs zmq",    "vs memcpy"};
  if (sharded) {
    header.insert(header.begin() + 4, "shards");
    header.push_back("speedup");
  }
  std::vector<std::vector<std::string>> cells;
  for (const TransportRow& r : report.rows) {
    std::vector<std::string> row = {r.transport, FormatByteSize(r.bytes), r.what,
                                    r.workers > 0 ? std::to_string(r.workers) : std::string("-"),
                                    r.threads > 0 ? std::to_string(r.threads) : std::string("-"),
                                    Fixed(r.ms.median, 3), Fixed(r.ms.min, 3), Fixed(r.ms.max, 3),
                                    Fixed(r.gbps, 2), Ratio(r.vs_zmq), Ratio(r.vs_memcpy)};
    if (sharded) {
      row.insert(row.begin() + 4, r.shards > 0 ? std::to_string(r.shards) : std::string("-"));
      row.push_back(Ratio(r.speedup));
    }
    cells.push_back(std::move(row));
  }
  out << Title(report.config) << '\n';
  WriteAligned(header, cells, 3, out);
  for (const TransportGoal& g : report.goals) out << GoalLine(g) << '\n';
  // Aggregation against memcpy, for each size and number of threads.
  for (const TransportRow& sum : report.rows) {
    if (sum.what != "sum") continue;
    for (const TransportRow& copy : report.rows) {
      if (copy.what != "memcpy" || copy.bytes != sum.bytes) continue;
      out << fmt::format("aggregation: {} summed on {} thread{} at {:.2f} GB/s of gradient, "
                         "{:.2f}x memcpy's {:.2f} GB/s\n",
                         FormatByteSize(sum.bytes), sum.threads, sum.threads == 1 ? "" : "s",
                         sum.gbps, copy.gbps > 0 ? sum.gbps / copy.gbps : 0.0, copy.gbps);
    }
  }
}

void WriteTsv(const TransportReport& report, std::ostream& out) {
  out << "transport\tbytes\twhat\tworkers\tmedian_ms\tmin_ms\tmax_ms\trounds\tgbps\tvs_zmq"
         "\tvs_memcpy\tshards\tspeedup\tthreads\n";
  auto ratio = [](const std::optional<double>& r) {
    return r.has_value() ? fmt::format("{}", *r) : std::string("-");
  };
  for (const TransportRow& r : report.rows) {
    out << r.transport << '\t' << r.bytes << '\t' << r.what << '\t' << r.workers << '\t'
        << fmt::format("{}\t{}\t{}\t{}\t{}", r.ms.median, r.ms.min, r.ms.max, r.ms.count, r.gbps)
        << '\t' << ratio(r.vs_zmq) << '\t' << ratio(r.vs_memcpy) << '\t' << r.shards << '\t'
        << ratio(r.speedup) << '\t' << r.threads << '\n';
  }
}

void WriteJson(const TransportReport& report, std::ostream& out) {
  const TransportConfig& c = report.config;
  auto ratio = [](const std::optional<double>& r) {
    return r.has_value() ? JsonNumber(*r) : std::string("null");
  };
  out << "{\"title\":";
  WriteJsonString(Title(c), out);
  out << ",\"config\":{\"sizes\":[";
  for (size_t i = 0; i < c.sizes.size(); ++i) out << (i ? "," : "") << c.sizes[i];
  out << "],\"transports\":[";
  for (size_t i = 0; i < c.transports.size(); ++i) {
    if (i) out << ',';
    WriteJsonString(c.transports[i], out);
  }
  out << "],\"workers\":[";
  for (size_t i = 0; i < c.workers.size(); ++i) out << (i ? "," : "") << c.workers[i];
  out << "],\"shards\":[";
  for (size_t i = 0; i < c.shards.size(); ++i) out << (i ? "," : "") << c.shards[i];
  out << "],\"shard_workers\":" << c.shard_workers
      << ",\"sharded_only\":" << (c.sharded_only ? "true" : "false");
  out << ",\"sum_threads\":[";
  for (size_t i = 0; i < c.sum_threads.size(); ++i) out << (i ? "," : "") << c.sum_threads[i];
  out << "],\"rounds\":" << c.rounds << ",\"warmup\":" << c.warmup
      << ",\"chunk_bytes\":" << c.chunk_bytes << "},\"rows\":[";
  for (size_t i = 0; i < report.rows.size(); ++i) {
    const TransportRow& r = report.rows[i];
    if (i) out << ',';
    out << "{\"transport\":";
    WriteJsonString(r.transport, out);
    out << ",\"bytes\":" << r.bytes << ",\"what\":";
    WriteJsonString(r.what, out);
    out << ",\"workers\":" << r.workers << ",\"threads\":" << r.threads << ",\"median_ms\":" << JsonNumber(r.ms.median)
        << ",\"min_ms\":" << JsonNumber(r.ms.min) << ",\"max_ms\":" << JsonNumber(r.ms.max)
        << ",\"rounds\":" << r.ms.count << ",\"gbps\":" << JsonNumber(r.gbps)
        << ",\"vs_zmq\":" << ratio(r.vs_zmq) << ",\"vs_memcpy\":" << ratio(r.vs_memcpy)
        << ",\"shards\":" << r.shards << ",\"speedup\":" << ratio(r.speedup) << '}';
  }
  out << "],\"goals\":[";
  for (size_t i = 0; i < report.goals.size(); ++i) {
    const TransportGoal& g = report.goals[i];
    if (i) out << ',';
    out << "{\"goal\":";
    WriteJsonString(g.goal, out);
    out << ",\"transport\":";
    WriteJsonString(g.transport, out);
    out << ",\"bytes\":" << g.bytes << ",\"value\":" << JsonNumber(g.value)
        << ",\"limit\":" << JsonNumber(g.limit) << ",\"met\":" << (g.met ? "true" : "false")
        << '}';
  }
  out << "]}\n";
}

}  // namespace

std::vector<std::string> ValidateTransportConfig(const TransportConfig& config) {
  std::vector<std::string> problems;
  if (config.sizes.empty()) problems.push_back("--sizes: no payload size");
  for (int64_t s : config.sizes) {
    if (s < 4 || s > (int64_t{1} << 30) || s % 4 != 0) {
      problems.push_back("--sizes: " + std::to_string(s) +
                         " bytes is not a whole number of floats from 4 bytes to 1G");
    }
  }
  if (config.transports.empty()) problems.push_back("--transports: no transport");
  if (config.curve && !net::CurveAvailable()) {
    problems.push_back("--curve: this libzmq was built without CURVE");
  }
  for (const std::string& t : config.transports) {
    if (t != "tcp" && t != "ipc") problems.push_back("--transports: unknown transport '" + t + "' (tcp or ipc)");
  }
  if (config.workers.empty()) problems.push_back("--worker-counts: no cluster size");
  if (config.sum_threads.empty()) problems.push_back("--sum-threads: no number of threads");
  for (int64_t t : config.sum_threads) {
    if (t < 1 || t > 256) {
      problems.push_back("--sum-threads: " + std::to_string(t) + " is not in 1..256");
    }
  }
  for (int64_t w : config.workers) {
    if (w < 1 || w > 64) problems.push_back("--worker-counts: " + std::to_string(w) + " is not in 1..64");
  }
  if (config.rounds < 1 || config.rounds > 1000000) problems.push_back("--rounds must be in 1..1000000");
  if (config.warmup < 0 || config.warmup > 1000000) problems.push_back("--warmup must be in 0..1000000");
  if (config.chunk_bytes < 4 || config.chunk_bytes % 4 != 0 ||
      config.chunk_bytes > proto::kMaxChunkFloats * static_cast<int64_t>(sizeof(float))) {
    problems.push_back("--chunk-bytes must be a whole number of floats from 4 bytes to 256M");
  }
  for (int64_t k : config.shards) {
    if (k < 1 || k > 64) {
      problems.push_back("--shards: " + std::to_string(k) + " is not in 1..64");
      continue;
    }
    for (int64_t s : config.sizes) {
      if (s >= 4 && s / 4 < k) {
        problems.push_back("--shards: " + std::to_string(k) + " shards need at least " +
                           std::to_string(k) + " floats; --sizes gives " + std::to_string(s) +
                           " bytes");
      }
    }
  }
  if (config.shard_workers < 1 || config.shard_workers > 64) {
    problems.push_back("--shard-workers must be in 1..64");
  }
  if (config.sharded_only && config.shards.empty()) {
    problems.push_back("--sharded-only: no shard count to measure (--shards none)");
  }
  if (config.timeout.count() <= 0) problems.push_back("the timeout must be positive");
  return problems;
}

Result<int64_t> ParseByteSize(std::string_view text) {
  const std::string original(text);
  int64_t unit = 1;
  if (!text.empty()) {
    switch (std::toupper(static_cast<unsigned char>(text.back()))) {
      case 'K': unit = int64_t{1} << 10; break;
      case 'M': unit = int64_t{1} << 20; break;
      case 'G': unit = int64_t{1} << 30; break;
      default: break;
    }
    if (unit > 1) text.remove_suffix(1);
  }
  if (text.empty() || text.size() > 10 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return Status::InvalidArgument("'" + original + "' is not a size such as 4096, 512K or 4M");
  }
  const int64_t bytes = std::stoll(std::string(text)) * unit;
  if (bytes <= 0 || bytes > (int64_t{1} << 30)) {
    return Status::InvalidArgument("'" + original + "' is not a size from 1 byte to 1G");
  }
  return bytes;
}

std::string FormatByteSize(int64_t bytes) {
  for (auto [unit, suffix] : {std::pair<int64_t, const char*>{int64_t{1} << 30, "G"},
                              {int64_t{1} << 20, "M"},
                              {int64_t{1} << 10, "K"}}) {
    if (bytes >= unit && bytes % unit == 0) return std::to_string(bytes / unit) + suffix;
  }
  return std::to_string(bytes);
}

int64_t BytesMoved(const TransportRow& row) {
  if (row.what == "memcpy" || row.what == "sum") return row.bytes;
  if (row.what == "dmlps" || row.what == "dmlps-curve" || row.what == "dmlps-sharded") {
    return 2 * std::max<int64_t>(row.workers, 1) * row.bytes;
  }
  return 2 * row.bytes;
}

void CompleteTransportReport(TransportReport* report) {
  auto find = [&](const std::string& transport, int64_t bytes, const std::string& what,
                  int64_t workers, int64_t shards = 0) -> const TransportRow* {
    for (const TransportRow& r : report->rows) {
      if (r.transport == transport && r.bytes == bytes && r.what == what && r.workers == workers &&
          r.shards == shards && r.ms.count > 0 && r.ms.median > 0) {
        return &r;
      }
    }
    return nullptr;
  };
  for (TransportRow& r : report->rows) {
    if (const TransportRow* zmq = find(r.transport, r.bytes, "zmq", 0); zmq != nullptr) {
      r.vs_zmq = r.ms.median / zmq->ms.median;
    }
    if (const TransportRow* copy = find("mem", r.bytes, "memcpy", 0); copy != nullptr) {
      r.vs_memcpy = r.ms.median / copy->ms.median;
    }
    if (r.what != "dmlps-sharded" || r.ms.median <= 0) continue;
    if (const TransportRow* one = find(r.transport, r.bytes, r.what, r.workers, 1);
        one != nullptr) {
      r.speedup = one->ms.median / r.ms.median;
    }
  }
  report->goals.clear();
  struct Asked {
    int64_t bytes;
    double limit;
    const char* goal;
  };
  const Asked asked[] = {
      {int64_t{4} << 20, 1.15, "4M push+pull within 1.15x raw ZeroMQ ping-pong"},
      {int64_t{64} << 20, 0.5, "64M push+pull within 0.5x raw ZeroMQ single-message ping-pong"},
  };
  for (const std::string& transport : report->config.transports) {
    for (const Asked& a : asked) {
      const TransportRow* ours = find(transport, a.bytes, "dmlps", 1);
      const TransportRow* zmq = find(transport, a.bytes, "zmq", 0);
      if (ours == nullptr || zmq == nullptr) continue;
      TransportGoal goal;
      goal.goal = a.goal;
      goal.transport = transport;
      goal.bytes = a.bytes;
      goal.value = ours->ms.median / zmq->ms.median;
      goal.limit = a.limit;
      goal.met = goal.value <= a.limit;
      report->goals.push_back(goal);
    }
  }
}

Result<TransportReport> RunTransportBench(const TransportConfig& config,
                                          const std::atomic<int>* signal,
                                          const TransportProgress& progress) {
  if (std::vector<std::string> problems = ValidateTransportConfig(config); !problems.empty()) {
    return Status::InvalidArgument(problems.front());
  }
  DMLPS_ASSIGN_OR_RETURN(TempDir dir, TempDir::Make());
  TransportReport report;
  report.config = config;
  int64_t sockets = 0;
  auto address = [&](const std::string& transport) {
    if (transport == "tcp") return std::string("tcp://127.0.0.1:*");
    return "ipc://" + dir.path() + "/s" + std::to_string(sockets++);
  };
  auto interrupted = [&] { return signal != nullptr && signal->load() != 0; };
  // One measurement of a size: what it is, and how to take `rounds` rounds
  // of it (after the warm-up).
  struct Slot {
    TransportRow row;
    std::function<Result<std::vector<double>>(const TransportConfig&)> take;
    std::vector<double> times;
  };
  for (int64_t bytes : config.sizes) {
    std::vector<Slot> slots;
    auto slot = [&](std::string transport, std::string what, int64_t workers, int64_t shards,
                    auto take) {
      Slot s;
      s.row.transport = std::move(transport);
      s.row.bytes = bytes;
      s.row.what = std::move(what);
      s.row.workers = workers;
      s.row.shards = shards;
      s.take = take;
      slots.push_back(std::move(s));
    };
    const bool all = !config.sharded_only;
    if (all) {
      slot("mem", "memcpy", 0, 0,
           [bytes](const TransportConfig& c) -> Result<std::vector<double>> {
             return MemcpyTimes(bytes, c);
           });
      for (int64_t threads : config.sum_threads) {
        slot("mem", "sum", 0, 0, [bytes, threads](const TransportConfig& c) {
          return SumTimes(bytes, threads, c);
        });
        slots.back().row.threads = threads;
      }
    }
    const int64_t pieces = (bytes + config.chunk_bytes - 1) / config.chunk_bytes;
    for (const std::string& transport : config.transports) {
      if (all) {
        slot(transport, "zmq", 0, 0, [&, bytes, transport](const TransportConfig& c) {
          Shared shared(signal);
          return RawPingPong(address(transport), bytes, 1, c, shared);
        });
      }
      if (all && pieces > 1) {
        slot(transport, "zmq-chunks", 0, 0,
             [&, bytes, pieces, transport](const TransportConfig& c) {
               Shared shared(signal);
               return RawPingPong(address(transport), bytes, pieces, c, shared);
             });
      }
      for (int64_t workers : config.workers) {
        if (!all) break;
        slot(transport, "dmlps", workers, 0,
             [&, bytes, workers, transport](const TransportConfig& c) {
               Shared shared(signal);
               return DmlpsRoundTrips({address(transport)}, bytes, workers, false, c, shared);
             });
        if (config.curve) {
          slot(transport, "dmlps-curve", workers, 0,
               [&, bytes, workers, transport](const TransportConfig& c) {
                 Shared shared(signal);
                 return DmlpsRoundTrips({address(transport)}, bytes, workers, true, c, shared);
               });
        }
      }
      for (int64_t shards : config.shards) {
        slot(transport, "dmlps-sharded", config.shard_workers, shards,
             [&, bytes, shards, transport](const TransportConfig& c) {
               Shared shared(signal);
               std::vector<std::string> addresses;
               for (int64_t k = 0; k < shards; ++k) addresses.push_back(address(transport));
               return DmlpsRoundTrips(addresses, bytes, c.shard_workers, false, c, shared);
             });
      }
    }
    // The measurements take turns, a few rounds each, so that whatever
    // else the machine does meanwhile hits them alike; each turn starts
    // afresh with its warm-up rounds.
    const int64_t turns = std::min(config.rounds, kTurns);
    for (int64_t turn = 0; turn < turns; ++turn) {
      TransportConfig part = config;
      part.rounds = config.rounds / turns + (turn < config.rounds % turns ? 1 : 0);
      for (Slot& s : slots) {
        if (interrupted()) return Status::Unavailable("interrupted");
        DMLPS_ASSIGN_OR_RETURN(std::vector<double> times, s.take(part));
        s.times.insert(s.times.end(), times.begin(), times.end());
      }
    }
    for (Slot& s : slots) {
      TransportRow row =
          MakeRow(s.row.transport, bytes, s.row.what, s.row.workers, s.row.threads, s.times);
      row.shards = s.row.shards;
      if (progress) progress(row);
      report.rows.push_back(std::move(row));
    }
  }
  CompleteTransportReport(&report);
  return report;
}

void WriteTransportReport(const TransportReport& report, Format format, std::ostream& out) {
  switch (format) {
    case Format::kTable: WriteTable(report, out); break;
    case Format::kTsv: WriteTsv(report, out); break;
    case Format::kJson: WriteJson(report, out); break;
  }
}

}  // namespace dmlps::bench
