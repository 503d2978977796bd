// The ROUTER that the workers of a server shard beyond 0 (shard.h) push
// to: bound before the slice is known, with limits that follow the frame
// limit, and held to the slice's own limits once shard 0's Welcome says
// which slice it is, as shard 0 is to the model's (listen_options.h).
#ifndef DMLPS_SERVER_SHARD_LISTENER_H_
#define DMLPS_SERVER_SHARD_LISTENER_H_

#include <cstdint>
#include <utility>
#include <zmq.hpp>

#include "dmlps/base/status.h"
#include "dmlps/net/endpoint.h"
#include "dmlps/server/server.h"

namespace dmlps::server {

class ShardListener {
 public:
  // Binds --bind with the keys `options` holds (ReadServerKeys), the
  // limits of `config`, and the defaults the frame limit gives the rest.
  static Result<ShardListener> Bind(zmq::context_t& context, const ServerConfig& config,
                                    net::BindOptions options);

  // Holds the listener to a slice of `floats` floats in a job of
  // `num_workers` workers: the largest message (the config's, or the
  // slice plus kMessageHeadroom), the connections, the unread bytes and the
  // send queue. Binds again, so call it before any worker learns the
  // address.
  Status Fit(int64_t floats, int64_t num_workers);

  net::Endpoint& endpoint() { return endpoint_; }
  // The most bytes a worker's message may carry (Fit's).
  int64_t max_bytes() const { return max_bytes_; }

 private:
  ShardListener(net::Endpoint endpoint, const ServerConfig& config)
      : endpoint_(std::move(endpoint)), config_(&config) {}

  net::Endpoint endpoint_;
  const ServerConfig* config_;
  int64_t max_bytes_ = 0;
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_SHARD_LISTENER_H_
