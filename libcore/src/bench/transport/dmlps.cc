// The dmlps side of dmlps-bench transport: the bench server, which runs as
// dmlps-server does, and the round trips between bench servers and bench
// workers (see worker.cc). The rest of the bench: the baselines
// in baselines.cc, the plan and turns of the measurements in
// run.cc, the report in report.cc.
#include "bench/transport/dmlps.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <variant>
#include <zmq.hpp>

#include "bench/transport/worker.h"
#include "dmlps/net/curve.h"
#include "dmlps/net/endpoint.h"
#include "dmlps/optim/optimizer.h"
#include "dmlps/server/server.h"
#include "dmlps/sync/driver.h"
#include "dmlps/sync/policy.h"
#include "server/intake.h"
#include "server/model_store.h"

namespace dmlps::bench {
namespace {

// The server's side, as dmlps-server does it with the BSP policy: pushes are
// opened as IncomingTensors (whole, or chunk by chunk), summed, applied and
// answered through the ModelStore, the model streaming back chunk by chunk.
// The policy's actions come through the driver, as dmlps-server's do.
class BenchServer : private sync::ReplySink,
                    private sync::UpdateSink<std::shared_ptr<proto::IncomingTensor>>,
                    private sync::RunEvents {
 public:
  BenchServer(net::Endpoint& endpoint, int64_t floats, int64_t workers,
              const TransportConfig& config, Shared& shared)
      : endpoint_(endpoint),
        workers_(workers),
        config_(config),
        shared_(shared),
        store_(std::vector<float>(static_cast<size_t>(floats), 0.f),
               ChunkBytes(config, floats * static_cast<int64_t>(sizeof(float))) /
                   static_cast<int64_t>(sizeof(float))),
        peers_(static_cast<size_t>(workers)) {}

  Status Run(const std::atomic<bool>& quit) {
    sync::PolicyConfig policy_config;
    policy_config.name = "bsp";
    policy_config.job.workers = workers_;
    policy_config.job.batch = 1;
    DMLPS_ASSIGN_OR_RETURN(std::unique_ptr<sync::Policy> policy, sync::MakePolicy(policy_config));
    driver_.emplace(
        std::move(policy), sync::DriverOptions{},
        sync::DriverSinks<Gradient>{.replies = *this, .updates = *this, .events = *this});
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

  // The first error the sinks met since the last call, which clears it.
  Status TakeError() {
    Status error = std::move(error_);
    error_ = Status::Ok();
    return error;
  }
  void Fail(Status status) {
    if (error_.ok()) error_ = std::move(status);
  }

  // The driver's sinks: BSP stages, applies and answers pulls, nothing more.
  void Stage(const sync::HandledPush<Gradient>& push, double weight) override {
    if (push.payload != nullptr) store_.Stage(push.payload, static_cast<float>(weight));
  }
  void Apply(double scale, bool with_optimizer, int64_t /*version*/) override {
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

}  // namespace

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
    DMLPS_ASSIGN_OR_RETURN(
        net::Endpoint endpoint,
        net::Endpoint::Bind(*server_contexts[static_cast<size_t>(k)],
                            bind_addresses[static_cast<size_t>(k)], bind_options));
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
          Status done =
              RunBenchWorker(*worker_contexts[i], shards > 1 ? shard_contexts[i].get() : nullptr,
                             addresses, bounds, keys[i], w, config, shared, &times[i]);
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

}  // namespace dmlps::bench
