// What the server's event loops share: shard 0's (server.cc) and the other
// shards' (shard.cc).
#ifndef DMLPS_SERVER_LOOP_H_
#define DMLPS_SERVER_LOOP_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <zmq.hpp>

namespace dmlps::server {

using Clock = std::chrono::steady_clock;

// How long one wait for a message lasts before the loop looks at its timers.
inline constexpr std::chrono::milliseconds kPollSlice{20};
// How long the end of a run waits for the chunks of streamed pushes in flight.
inline constexpr std::chrono::milliseconds kDrainLimit{5000};
// A streamed push whose chunks stop coming for this long is closed, what is
// missing left out, so that the model's other lanes and replies go on.
inline constexpr std::chrono::milliseconds kStreamStall{10000};
// Refused messages logged at warning level before the log quietens down.
inline constexpr int64_t kLoudRefusals = 20;

// A ROUTER identity as a map key.
inline std::string IdentityKey(const zmq::message_t& identity) {
  return std::string(static_cast<const char*>(identity.data()), identity.size());
}

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_LOOP_H_
