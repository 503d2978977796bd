#include "server/shard_listener.h"

#include "server/listen_options.h"

namespace dmlps::server {

Result<ShardListener> ShardListener::Bind(zmq::context_t& context, const ServerConfig& config,
                                          net::BindOptions options) {
  if (config.max_message_bytes > 0) options.max_frame_bytes = config.max_message_bytes;
  options.max_connections = config.max_connections;
  // The slice's size is not known yet: the unread bound follows the frame
  // limit (the default one, or --max-message-bytes), as on shard 0.
  options.max_unread_bytes = 4 * options.max_frame_bytes + kUnreadHeadroom;
  DMLPS_ASSIGN_OR_RETURN(net::Endpoint endpoint,
                         net::Endpoint::Bind(context, config.bind, options));
  return ShardListener(std::move(endpoint), config);
}

Status ShardListener::Fit(int64_t floats, int64_t num_workers) {
  const int64_t bytes = floats * static_cast<int64_t>(sizeof(float));
  max_bytes_ =
      config_->max_message_bytes > 0 ? config_->max_message_bytes : bytes + kMessageHeadroom;
  // The connection limits shard 0 has, now that the slice and the
  // workers are known (messages over max_bytes_ are refused as they come).
  DMLPS_RETURN_IF_ERROR(endpoint_.SetConnectionLimits(
      config_->max_connections > 0 ? config_->max_connections : num_workers + kConnectionHeadroom,
      4 * max_bytes_ + kUnreadHeadroom));
  // And its frame limit and send queue, which ZeroMQ takes at bind time:
  // bound again.
  return endpoint_.Rebind(max_bytes_, MaxQueuedMessages(bytes));
}

}  // namespace dmlps::server
