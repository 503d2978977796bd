// What the server's event loops share: shard 0's (server.cc) and the other
// shards' (shard.cc).
#ifndef DMLPS_SERVER_LOOP_H_
#define DMLPS_SERVER_LOOP_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <zmq.hpp>

#include "dmlps/base/status.h"
#include "dmlps/net/endpoint.h"
#include "dmlps/proto/codec.h"

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

// The first bytes of a ROUTER identity in hex, to name a peer that holds
// no rank.
inline std::string HexPrefix(const zmq::message_t& identity) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  const auto* bytes = static_cast<const unsigned char*>(identity.data());
  for (size_t i = 0; i < identity.size() && i < 8; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 15];
  }
  return out;
}

// How a refusal names the sender of a message: "worker 3" for one holding
// a rank (-1: none), else `stranger`.
inline std::string SenderName(int64_t rank, std::string_view stranger) {
  return rank >= 0 ? "worker " + std::to_string(rank) : std::string(stranger);
}

// Decodes what a ROUTER received (the identity first). Protocol error, the
// reason its message, when the frames after the identity hold more than
// `max_bytes` (read no further) or do not decode.
inline Result<proto::Message> DecodeBounded(net::Frames& frames, int64_t max_bytes) {
  int64_t bytes = 0;
  for (size_t i = 1; i < frames.size(); ++i) bytes += static_cast<int64_t>(frames[i].size());
  if (bytes > max_bytes) {
    return Status::Protocol("message of " + std::to_string(bytes) + " bytes (at most " +
                            std::to_string(max_bytes) + ")");
  }
  return proto::DecodeMessage(frames, 1);
}

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_LOOP_H_
