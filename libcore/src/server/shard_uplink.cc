#include "server/shard_uplink.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <utility>
#include <variant>

#include "dmlps/net/secret.h"
#include "dmlps/trace/trace.h"

namespace dmlps::server {

Status ShardUplink::Register(zmq::context_t& context, const net::ConnectOptions& options,
                             const std::string& address) {
  DMLPS_ASSIGN_OR_RETURN(net::Endpoint coordinator,
                         net::Endpoint::Connect(context, config_.coordinator, options));
  endpoint_.emplace(std::move(coordinator));
  proto::Hello hello;
  if (!config_.secret_file.empty()) {
    // Without CURVE, shard 0 admits a shard that presents it.
    DMLPS_ASSIGN_OR_RETURN(hello.secret, net::ReadSecretFile(config_.secret_file));
  }
  hello.host = net::HostName();
  hello.pid = getpid();
  hello.shard = config_.shard_index;
  hello.shards = config_.shard_count;
  hello.address = address;
  return endpoint_->SendMessage(nullptr, hello);
}

Result<std::optional<proto::Message>> ShardUplink::AwaitWelcome(
    const std::function<bool()>& interrupted) {
  // Shard 0 answers once its data is loaded: as long as a worker may wait.
  const Clock::time_point deadline = Clock::now() + config_.worker_timeout;
  net::Frames frames;
  while (true) {
    if (interrupted()) return std::optional<proto::Message>();
    if (Clock::now() >= deadline) {
      return Status::Unavailable(
          "no answer from shard 0 at " + config_.coordinator + " for " +
          fmt::format("{:g}", std::chrono::duration<double>(config_.worker_timeout).count()) +
          " s");
    }
    DMLPS_ASSIGN_OR_RETURN(bool got, endpoint_->Receive(&frames, kPollSlice));
    if (!got) continue;
    DMLPS_ASSIGN_OR_RETURN(proto::Message message, proto::DecodeMessage(frames, 0));
    if (auto* error = std::get_if<proto::Error>(&message.body)) {
      if (error->fatal) return Status::Unavailable("shard 0 refused this shard: " + error->message);
      spdlog::warn("shard 0 says: {}", error->message);
      continue;
    }
    if (auto* stop = std::get_if<proto::Stop>(&message.body)) {
      return Status::Unavailable("shard 0 stopped before this shard joined: " + stop->reason);
    }
    if (std::holds_alternative<proto::Welcome>(message.body)) {
      return std::optional<proto::Message>(std::move(message));
    }
    // Anything else is a heartbeat.
  }
}

Status ShardUplink::Ready() {
  DMLPS_RETURN_IF_ERROR(Send(proto::Heartbeat{trace::NowMicros()}));
  seen_ = Clock::now();
  last_heartbeat_ = seen_;
  return Status::Ok();
}

Status ShardUplink::Tick(Clock::time_point now) {
  if (now - last_heartbeat_ >= config_.heartbeat) {
    last_heartbeat_ = now;
    Status sent = Send(proto::Heartbeat{trace::NowMicros()});
    if (!sent.ok()) spdlog::debug("{}: heartbeat to shard 0 failed: {}", name_, sent.ToString());
  }
  if (now - seen_ >= config_.worker_timeout) {
    return Status::Unavailable(
        fmt::format("shard 0 at {} silent for {:g} s", config_.coordinator,
                    std::chrono::duration<double>(config_.worker_timeout).count()));
  }
  return Status::Ok();
}

}  // namespace dmlps::server
