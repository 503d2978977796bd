// A server shard beyond 0's link to shard 0 (shard.h): the shard's
// registration, the heartbeats by which each side knows the other is
// there, and the messages the shard sends up.
#ifndef DMLPS_SERVER_SHARD_UPLINK_H_
#define DMLPS_SERVER_SHARD_UPLINK_H_

#include <functional>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "dmlps/base/status.h"
#include "dmlps/net/endpoint.h"
#include "dmlps/proto/codec.h"
#include "dmlps/server/server.h"
#include "server/loop.h"

namespace dmlps::server {

class ShardUplink {
 public:
  // The link of the shard `config` runs (its log name `name`). `config`
  // outlives this.
  ShardUplink(const ServerConfig& config, std::string name)
      : config_(config), name_(std::move(name)) {}

  // Connects to shard 0 at --coordinator with `options` and says Hello as
  // this shard, whose workers are to push to `address`.
  Status Register(zmq::context_t& context, const net::ConnectOptions& options,
                  const std::string& address);
  // Waits for shard 0's Welcome, which comes once shard 0's data is loaded,
  // for as long as a worker may wait (--worker-timeout): the message, its
  // payload the slice's initial values of an external model; nullopt when
  // `interrupted` says so first. Unavailable when shard 0 does not answer,
  // refuses this shard or stops before.
  Result<std::optional<proto::Message>> AwaitWelcome(const std::function<bool()>& interrupted);
  // Tells shard 0 that this shard is ready (a Heartbeat), from which on the
  // heartbeats and shard 0's silence count.
  Status Ready();

  // Whether Register got as far as connecting.
  bool connected() const { return endpoint_.has_value(); }
  // The DEALER to shard 0. REQUIRES: connected().
  net::Endpoint& endpoint() { return *endpoint_; }
  Status Send(const proto::Body& body, net::Frames payload = {}) {
    return endpoint_->SendMessage(nullptr, body, std::move(payload));
  }
  // Shard 0 was heard from just now.
  void Heard() { seen_ = Clock::now(); }
  // Sends a heartbeat when --heartbeat passed since the last by `now`;
  // Unavailable when shard 0 was silent for --worker-timeout by then.
  Status Tick(Clock::time_point now);

 private:
  const ServerConfig& config_;
  const std::string name_;
  std::optional<net::Endpoint> endpoint_;
  Clock::time_point seen_;            // when shard 0 was last heard from
  Clock::time_point last_heartbeat_;  // when this shard last sent one
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_SHARD_UPLINK_H_
