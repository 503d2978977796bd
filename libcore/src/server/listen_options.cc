#include "server/listen_options.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>

#include "dmlps/net/curve.h"
#include "dmlps/proto/codec.h"

namespace dmlps::server {

Result<net::BindOptions> ReadServerKeys(const ServerConfig& config) {
  net::BindOptions options;
  if (config.curve_secret.empty()) return options;
  DMLPS_ASSIGN_OR_RETURN(net::CurveKeyPair pair, net::ReadSecretKeyFile(config.curve_secret));
  DMLPS_ASSIGN_OR_RETURN(options.allowed_keys, net::ReadAllowedKeys(config.curve_allow));
  options.curve_secret = pair.secret_key;
  if (config.shard_count > 1 && config.shard_index == 0) options.shard_key = pair.public_key;
  spdlog::info("CURVE on: server key {}, {} worker key{} admitted from {}", pair.public_key,
               options.allowed_keys.size(), options.allowed_keys.size() == 1 ? "" : "s",
               config.curve_allow);
  return options;
}

Result<net::ConnectOptions> ReadShardLinkKeys(const ServerConfig& config) {
  net::ConnectOptions options;
  if (config.curve_secret.empty()) return options;
  DMLPS_ASSIGN_OR_RETURN(net::CurveKeyPair pair, net::ReadSecretKeyFile(config.curve_secret));
  options.curve_secret = pair.secret_key;
  options.curve_server_key = pair.public_key;
  return options;
}

int64_t MaxQueuedMessages(int64_t model_bytes) {
  const int64_t chunk = proto::ChunkBytesFor(model_bytes);
  const int64_t chunks = (model_bytes + chunk - 1) / chunk;
  return 2 * (chunks + 2) + kQueueHeadroom;
}

Status SetServerLimits(const ServerConfig& config, const std::vector<int64_t>& bounds,
                       net::BindOptions* options) {
  const int64_t model_bytes = bounds.back() * static_cast<int64_t>(sizeof(float));
  // The largest payload a worker sends: the whole gradient (its slice), or
  // one chunk of it.
  const int64_t largest_push =
      std::min(bounds[1] * static_cast<int64_t>(sizeof(float)), proto::kDefaultChunkBytes);
  if (config.max_message_bytes > 0 && config.max_message_bytes < largest_push) {
    return Status::InvalidArgument("--max-message-bytes " +
                                   std::to_string(config.max_message_bytes) +
                                   " is less than a worker's push of this model needs (" +
                                   std::to_string(largest_push) + " bytes)");
  }
  options->max_frame_bytes =
      config.max_message_bytes > 0 ? config.max_message_bytes : model_bytes + kMessageHeadroom;
  options->max_queued_messages = MaxQueuedMessages(model_bytes);
  options->max_unread_bytes = 4 * options->max_frame_bytes + kUnreadHeadroom;
  options->max_connections = config.max_connections > 0 ? config.max_connections
                                                        : config.job.workers + kConnectionHeadroom +
                                                              config.shard_count - 1;
  return Status::Ok();
}

}  // namespace dmlps::server
