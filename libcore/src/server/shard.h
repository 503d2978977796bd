// Sharded servers: the shards beyond 0. Each holds a contiguous slice of
// the flat parameter vector, takes the workers' pushes of that slice, and
// carries out the orders shard 0 sends (stage, apply, reply, snapshot) in
// the order given, so that its slice goes through exactly the updates shard
// 0's policy decided.
#ifndef DMLPS_SERVER_SHARD_H_
#define DMLPS_SERVER_SHARD_H_

#include <atomic>
#include <cstdint>
#include <span>
#include <string>

#include "dmlps/base/status.h"
#include "dmlps/server/server.h"

namespace dmlps::server {

// The most server shards a job may have.
inline constexpr int64_t kMaxShards = 1024;

// Runs shard config.shard_index (>= 1) until shard 0 stops it (ok), shard 0
// is silent for config.worker_timeout or refuses it (Unavailable), or a
// signal arrives (nonzero in *signal). The report carries only the signal.
Result<RunReport> RunServerShard(const ServerConfig& config, const std::atomic<int>* signal);

// Writes `params` to `path` as raw little-endian float32, whole under a
// temporary name first (a reader never sees half a model).
Status WriteRawModel(const std::string& path, std::span<const float> params);

// Writes `address` and a newline to `path`, whole under a temporary name
// first (a reader never sees half an address).
Status WriteEndpointFile(const std::string& path, const std::string& address);

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_SHARD_H_
