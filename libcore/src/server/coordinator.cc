#include "server/coordinator.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "dmlps/net/secret.h"
#include "dmlps/server/server.h"
#include "server/shard_slice.h"

namespace dmlps::server {

std::string ShardName(const proto::Hello& hello) {
  return "server shard " + std::to_string(hello.shard) + " (" + hello.host + ":" +
         std::to_string(hello.pid) + ")";
}

ShardCoordinator::ShardCoordinator(net::Endpoint& endpoint, std::vector<int64_t> bounds,
                                   proto::Welcome shard_welcome, SnapshotSink evaluate,
                                   HelloSink welcome_worker)
    : endpoint_(endpoint),
      bounds_(std::move(bounds)),
      shard_welcome_(std::move(shard_welcome)),
      evaluate_(std::move(evaluate)),
      welcome_worker_(std::move(welcome_worker)),
      peers_(static_cast<size_t>(shard_count())),
      waiting_hellos_(shard_welcome_.num_workers + kConnectionHeadroom, kMaxHeldHelloBytes) {}

int64_t ShardCoordinator::ShardOf(const zmq::message_t& identity) const {
  auto it = shard_of_.find(IdentityKey(identity));
  return it == shard_of_.end() ? -1 : it->second;
}

Status ShardCoordinator::Register(const zmq::message_t& identity, const proto::Hello& hello,
                                  int64_t connection) {
  if (!sharded()) return Status::Config("this server is not sharded (no --shard 0/S)");
  if (!secret_.empty() && !net::SecretMatches(hello.secret, secret_)) {
    return Status::Config("a server shard must present the job secret (--secret)");
  }
  if (hello.shards != shard_count() || hello.shard < 1 || hello.shard >= shard_count()) {
    return Status::Config("shard " + std::to_string(hello.shard) + "/" +
                          std::to_string(hello.shards) + " does not fit this job of " +
                          std::to_string(shard_count()) + " shards");
  }
  std::optional<Peer>& peer = peers_[hello.shard];
  if (peer.has_value()) {
    // A shard lost its state when it went away: the job cannot go on with a
    // fresh one mid-run, nor have two.
    return Status::Config("shard " + std::to_string(hello.shard) + " is taken");
  }
  if (hello.address.empty()) return Status::Config("no address for workers to reach it at");
  peer = Peer{net::CopyFrame(identity), hello.address, hello.host, hello.pid, Clock::now()};
  peer->connection = connection;
  shard_of_[IdentityKey(identity)] = hello.shard;
  ++registered_;
  proto::Welcome welcome = shard_welcome_;
  welcome.num_params = bounds_.back();
  welcome.shard_index = hello.shard;
  welcome.shard_count = shard_count();
  welcome.bounds = bounds_;
  const std::string who = ShardName(hello);
  net::Frames payload;
  if (initial_ != nullptr) {
    welcome.layout = layout_;
    AppendSliceFrames(initial_, bounds_[hello.shard],
                      bounds_[hello.shard + 1] - bounds_[hello.shard], &payload);
  }
  if (Status sent = endpoint_.SendMessage(&identity, welcome, std::move(payload)); !sent.ok()) {
    spdlog::warn("cannot welcome {}: {}", who, sent.ToString());
  }
  spdlog::info("{} registered: parameters [{}, {}), workers reach it at {} ({}/{} shards)", who,
               bounds_[hello.shard], bounds_[hello.shard + 1], hello.address, registered_ + 1,
               shard_count());
  return Status::Ok();
}

void ShardCoordinator::MarkReady(int64_t shard) {
  if (peers_[shard]->ready) return;
  peers_[shard]->ready = true;
  ++ready_;
  if (AllRegistered()) {
    for (HelloHold::Held& held : waiting_hellos_.Take()) {
      welcome_worker_(held.identity, held.hello, held.sender);
    }
  }
}

Status ShardCoordinator::HoldHello(const zmq::message_t& identity, const proto::Hello& hello,
                                   const net::Sender& sender) {
  return waiting_hellos_.Hold(identity, hello, sender);
}

bool ShardCoordinator::Holds(const zmq::message_t& identity) const {
  return waiting_hellos_.Holds(identity);
}

void ShardCoordinator::DescribeShards(proto::Welcome* welcome) const {
  if (!sharded()) return;
  welcome->bounds = bounds_;
  welcome->servers.push_back(endpoint_.address());
  for (int64_t k = 1; k < shard_count(); ++k) welcome->servers.push_back(peers_[k]->address);
}

void ShardCoordinator::HandleMessage(int64_t shard, proto::Message& message) {
  peers_[shard]->last_seen = Clock::now();
  MarkReady(shard);
  const std::string who = "server shard " + std::to_string(shard);
  if (auto* slice = std::get_if<proto::Slice>(&message.body)) {
    Result<proto::IncomingTensor> values =
        proto::IncomingTensor::Open(slice->num_params, 0, 0, std::move(message.payload));
    if (!values.ok() || !values->complete()) {
      spdlog::warn("{} sent a bad slice of snapshot {}: {}", who, slice->id,
                   values.ok() ? "incomplete" : values.status().message());
      assemblies_.erase(slice->id);
      return;
    }
    FillSnapshot(slice->id, shard, values->size(),
                 [&](std::span<float> out) { values->CopyTo(0, values->size(), out); });
  } else if (auto* orders = std::get_if<proto::Orders>(&message.body)) {
    // Its checkpoints written, the orders echoed.
    for (const proto::Order& order : orders->orders) {
      if (order.kind == proto::Order::kCheckpoint) {
        peers_[shard]->written = std::max(peers_[shard]->written, order.clock);
      }
      if (order.kind == proto::Order::kNorm) AddNorm(shard, order.clock, order.value);
    }
  } else if (auto* error = std::get_if<proto::Error>(&message.body)) {
    if (error->fatal) {
      fatal_ = Status::Unavailable(who + " gave up: " + error->message);
      lost_ = shard;
    } else {
      spdlog::warn("{} reports: {}", who, error->message);
    }
  } else if (!std::holds_alternative<proto::Heartbeat>(message.body)) {
    spdlog::warn("ignoring an unexpected {} from {}",
                 proto::MsgTypeName(proto::TypeOf(message.body)), who);
  }
}

void ShardCoordinator::SendOrders() {
  if (orders_.empty() && std::none_of(peers_.begin(), peers_.end(), [](const auto& peer) {
        return peer.has_value() && !peer->backlog.empty();
      })) {
    return;
  }
  std::vector<proto::Order> fresh;
  fresh.swap(orders_);
  for (int64_t k = 1; k < shard_count(); ++k) {
    if (!peers_[k].has_value()) continue;
    Peer& peer = *peers_[k];
    proto::Orders batch;
    batch.orders.swap(peer.backlog);
    batch.orders.insert(batch.orders.end(), fresh.begin(), fresh.end());
    if (batch.orders.empty()) continue;
    Status sent = endpoint_.SendMessage(&peer.identity, batch);
    if (sent.ok()) continue;
    // A full queue: the shard is behind, not gone; its orders wait here.
    if (sent.code() == StatusCode::kUnavailable && sent.message() == net::kSendQueueFull &&
        batch.orders.size() <= kMaxBackloggedOrders) {
      peer.backlog = std::move(batch.orders);
      continue;
    }
    fatal_ = Status::Unavailable("server shard " + std::to_string(k) + " at " + peer.address +
                                 " lost: " + sent.message());
    lost_ = k;
  }
}

int64_t ShardCoordinator::BeginSnapshot(const Snapshot& stamp, bool must) {
  // The whole model is this shard's slice and the others': each sends its
  // part once its updates are in, and the snapshot is evaluated when all are.
  const int64_t id = next_snapshot_id_++;
  Assembly& assembly = assemblies_[id];
  assembly.snapshot = stamp;
  assembly.missing = shard_count();
  assembly.must = must;
  Order({proto::Order::kSnapshot, -1, 0, static_cast<double>(id)});
  return id;
}

void ShardCoordinator::AddOwnSlice(int64_t id, double seconds, const std::vector<float>& values) {
  if (auto it = assemblies_.find(id); it != assemblies_.end())
    it->second.snapshot.seconds = seconds;
  FillSnapshot(id, 0, static_cast<int64_t>(values.size()),
               [&](std::span<float> out) { std::copy(values.begin(), values.end(), out.begin()); });
}

void ShardCoordinator::FillSnapshot(int64_t id, int64_t shard, int64_t count,
                                    const std::function<void(std::span<float>)>& copy) {
  auto it = assemblies_.find(id);
  if (it == assemblies_.end()) return;
  Assembly& assembly = it->second;
  const auto begin = static_cast<size_t>(bounds_[shard]);
  if (count != bounds_[shard + 1] - bounds_[shard]) {
    spdlog::warn("server shard {} sent a slice of {} parameters, not {}; snapshot {} not evaluated",
                 shard, count, bounds_[shard + 1] - bounds_[shard], id);
    assemblies_.erase(it);
    return;
  }
  if (assembly.values == nullptr) {
    assembly.values = std::make_shared<std::vector<float>>(static_cast<size_t>(bounds_.back()));
  }
  copy(std::span<float>(*assembly.values).subspan(begin, static_cast<size_t>(count)));
  if (--assembly.missing > 0) return;
  Snapshot snapshot = assembly.snapshot;
  snapshot.params = std::move(assembly.values);
  const bool must = assembly.must;
  assemblies_.erase(it);
  evaluate_(std::move(snapshot), must);
}

void ShardCoordinator::AwaitSlices(std::chrono::milliseconds limit) {
  if (!sharded()) return;
  const Clock::time_point deadline = Clock::now() + limit;
  net::Frames frames;
  while (!assemblies_.empty() && Clock::now() < deadline && fatal_.ok()) {
    Result<bool> got = endpoint_.Receive(&frames, kPollSlice);
    if (!got.ok()) return;
    if (!*got || frames.size() < 2) continue;
    const int64_t shard = ShardOf(frames[0]);
    if (shard < 0) continue;  // the run is over for workers
    Result<proto::Message> message = proto::DecodeMessage(frames, 1);
    if (message.ok()) HandleMessage(shard, *message);
  }
  if (!assemblies_.empty()) {
    spdlog::warn("{} snapshot{} not evaluated: the other shards' slices did not come",
                 assemblies_.size(), assemblies_.size() == 1 ? "" : "s");
  }
}

void ShardCoordinator::SendHeartbeats(int64_t now_us) {
  for (std::optional<Peer>& peer : peers_) {
    if (!peer.has_value()) continue;
    Status sent = endpoint_.SendMessage(&peer->identity, proto::Heartbeat{now_us});
    if (!sent.ok()) spdlog::debug("heartbeat to {} failed: {}", peer->address, sent.ToString());
  }
}

void ShardCoordinator::CheckSilence(Clock::time_point now, std::chrono::milliseconds timeout) {
  for (size_t k = 1; k < peers_.size(); ++k) {
    // A shard holds a slice of the model no one else has: the run cannot go
    // on without it.
    if (peers_[k].has_value() && now - peers_[k]->last_seen >= timeout) {
      fatal_ = Status::Unavailable(fmt::format("server shard {} at {} lost: silent for {:g} s", k,
                                               peers_[k]->address,
                                               std::chrono::duration<double>(timeout).count()));
      lost_ = static_cast<int64_t>(k);
    }
  }
}

bool ShardCoordinator::LoseClosed(int64_t connection) {
  for (size_t k = 1; k < peers_.size() && connection != 0; ++k) {
    if (!peers_[k].has_value() || peers_[k]->connection != connection) continue;
    fatal_ = Status::Unavailable(
        fmt::format("server shard {} at {} lost: its connection closed", k, peers_[k]->address));
    lost_ = static_cast<int64_t>(k);
    return true;
  }
  return false;
}

std::vector<int64_t> ShardCoordinator::Missing() const {
  std::vector<int64_t> missing;
  for (size_t k = 1; k < peers_.size(); ++k) {
    if (!peers_[k].has_value() || !peers_[k]->ready) missing.push_back(static_cast<int64_t>(k));
  }
  return missing;
}

bool ShardCoordinator::Written(int64_t version) const {
  return std::all_of(peers_.begin() + 1, peers_.end(), [version](const std::optional<Peer>& p) {
    return p.has_value() && p->written >= version;
  });
}

void ShardCoordinator::AddNorm(int64_t shard, int64_t step, double squares) {
  // Steps are clipped in order, one at a time per shard: more than a few
  // waiting is a shard that reports steps that never were.
  constexpr size_t kMaxWaitingNorms = 64;
  auto found = norms_.find(step);
  if (found == norms_.end()) {
    if (norms_.size() >= kMaxWaitingNorms) {
      spdlog::warn("server shard {} reported the norm of step {}: too many steps waiting", shard,
                   step);
      return;
    }
    found = norms_.emplace(step, std::vector<std::optional<double>>(bounds_.size() - 1)).first;
  }
  std::vector<std::optional<double>>& parts = found->second;
  parts[static_cast<size_t>(shard)] = squares;
  if (std::any_of(parts.begin(), parts.end(), [](const auto& p) { return !p.has_value(); })) {
    return;
  }
  double total = 0;  // in shard order: every shard clips by the same norm
  for (const auto& part : parts) total += *part;
  norms_.erase(found);
  Order({proto::Order::kClip, -1, step, total});
  SendOrders();
  if (norm_sink_) norm_sink_(step, total);
}

void ShardCoordinator::RollBack(const std::string& why) {
  norms_.clear();
  for (size_t k = 1; k < peers_.size(); ++k) {
    if (!peers_[k].has_value() || static_cast<int64_t>(k) == lost_) continue;
    Status sent = endpoint_.SendMessage(&peers_[k]->identity, proto::Error{why, true, true});
    if (!sent.ok()) spdlog::debug("cannot tell shard {}: {}", k, sent.ToString());
  }
}

void ShardCoordinator::Stop(const std::string& reason) {
  SendOrders();
  for (std::optional<Peer>& peer : peers_) {
    if (!peer.has_value()) continue;
    Status sent = endpoint_.SendMessage(&peer->identity, proto::Stop{reason});
    if (!sent.ok()) spdlog::debug("cannot stop shard at {}: {}", peer->address, sent.ToString());
  }
  // Workers held until every shard was back: the run ends without them.
  for (const HelloHold::Held& held : waiting_hellos_.Take()) {
    Status sent = endpoint_.SendMessage(&held.identity, proto::Stop{reason});
    if (!sent.ok()) spdlog::debug("cannot stop worker {}: {}", held.hello.rank, sent.ToString());
  }
}

}  // namespace dmlps::server
