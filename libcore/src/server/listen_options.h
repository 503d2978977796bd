// How shard 0 listens: the keys it admits workers by, and the limits on
// what a peer may send, from the config and the model.
#ifndef DMLPS_SERVER_LISTEN_OPTIONS_H_
#define DMLPS_SERVER_LISTEN_OPTIONS_H_

#include <cstdint>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/net/endpoint.h"
#include "dmlps/server/server.h"

namespace dmlps::server {

// The CURVE keys of --curve-secret and --curve-allow (none: plaintext),
// read before anything else so that a bad key file fails at once, not
// after the data has loaded. Logs the keys admitted.
// Sharded servers share one key pair: shard 0 also admits its public key,
// as the key the other shards connect with (BindOptions::shard_key).
Result<net::BindOptions> ReadServerKeys(const ServerConfig& config);

// How a server shard beyond 0 connects to shard 0: with CURVE, as a client
// holding the servers' key pair (--curve-secret), which shard 0 admits as a
// shard's and no other key; plaintext without --curve-secret.
Result<net::ConnectOptions> ReadShardLinkKeys(const ServerConfig& config);

// What a connection may send beyond four of the largest messages before
// they are whole and read (see net::BindOptions::max_unread_bytes): room
// for the kernel's and ZeroMQ's buffers.
inline constexpr int64_t kUnreadHeadroom = int64_t{16} << 20;

// Control messages (heartbeats, errors, Continues) a peer's send queue
// holds beyond its model replies.
inline constexpr int64_t kQueueHeadroom = 16;

// The messages queued for one peer at most: every message of two whole
// model replies of `model_bytes` (a header and its chunks) and
// kQueueHeadroom more. A worker reads each reply before it pulls again, so
// only a peer that stops reading fills it.
int64_t MaxQueuedMessages(int64_t model_bytes);

// Sets the largest message, the most connections, the queue per peer and
// the unread bytes per connection *options allows for a
// model cut at `bounds` (ShardBounds), this shard holding the first slice:
// the config's, or the defaults (the model plus kMessageHeadroom; the
// workers and the other shards plus kConnectionHeadroom). InvalidArgument
// when --max-message-bytes is below what a worker's push needs.
Status SetServerLimits(const ServerConfig& config, const std::vector<int64_t>& bounds,
                       net::BindOptions* options);

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_LISTEN_OPTIONS_H_
