// Hellos a server holds until it can answer them (the external model is
// not known yet; the other shards have not all registered): at most one per
// connection, and at most so many, so that a peer saying Hello again and
// again, or many peers, cannot make it hold more than the bound.
#ifndef DMLPS_SERVER_HELLO_HOLD_H_
#define DMLPS_SERVER_HELLO_HOLD_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "dmlps/base/status.h"
#include "dmlps/net/endpoint.h"
#include "dmlps/proto/messages.h"

namespace dmlps::server {

// What one held Hello costs at least in the bound on bytes, beyond its
// strings and layout.
inline constexpr int64_t kHeldHelloBytes = 256;
// The bytes a server holds in Hellos at most: some 4096 layouts of 64
// tensors with names of 64 characters.
inline constexpr int64_t kMaxHeldHelloBytes = int64_t{64} << 20;

class HelloHold {
 public:
  struct Held {
    zmq::message_t identity;
    proto::Hello hello;
    net::Sender sender;  // its key and connection (Endpoint::LastSender)
  };

  // Holds at most `max_hellos` Hellos of at most `max_bytes` together (as
  // HeldBytes counts them).
  HelloHold(int64_t max_hellos, int64_t max_bytes)
      : max_hellos_(max_hellos), max_bytes_(max_bytes) {}

  // Holds `hello` from `identity` in place of one held before from the same
  // connection, or asking for the same rank (a worker that rejoins from a
  // new socket is answered there only). Unavailable, saying why, when the
  // bound leaves no room: the caller refuses the peer.
  Status Hold(const zmq::message_t& identity, proto::Hello hello, net::Sender sender);
  // Whether a Hello from `identity` is held.
  bool Holds(const zmq::message_t& identity) const;
  // Every Hello held, oldest first; none is held after.
  std::vector<Held> Take();
  int64_t size() const { return static_cast<int64_t>(held_.size()); }
  int64_t bytes() const { return bytes_; }

  // What `hello` counts for in the bound: its strings, its layout and
  // kHeldHelloBytes.
  static int64_t HeldBytes(const proto::Hello& hello);

 private:
  const int64_t max_hellos_;
  const int64_t max_bytes_;
  std::vector<Held> held_;
  int64_t bytes_ = 0;
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_HELLO_HOLD_H_
