// The ZAP handler of a server's ROUTER: decides, at the handshake, which
// connections the ROUTER may ever see. With CURVE it admits only listed
// worker keys; with a connection limit it turns away connections beyond it.
// A refused connection never reaches the ROUTER, so it leaves no state there.
#ifndef DMLPS_NET_GATEKEEPER_H_
#define DMLPS_NET_GATEKEEPER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "dmlps/base/status.h"

namespace dmlps::net {

// ZeroMQ looks for the ZAP handler of a context at this address (RFC 27).
inline constexpr char kZapAddress[] = "inproc://zeromq.zap.01";
// The domain a guarded ROUTER announces, so that ZeroMQ asks the handler
// about plaintext (NULL mechanism) connections too.
inline constexpr char kZapDomain[] = "dmlps";

struct GateRules {
  bool curve = false;                  // admit only CURVE clients whose key is in allowed_keys
  std::set<std::string> allowed_keys;  // Z85 public keys
  int64_t max_connections = 0;         // connections open at once, handshakes included; 0: any
  int64_t max_unread_bytes = 0;        // bytes one connection may be ahead of its reader; 0: any
  // With CURVE, a key admitted besides allowed_keys whose connections carry
  // the ZAP user id kShardUserId (server shards' own key); empty: none.
  std::string shard_key;
};

// The ZAP user id of a connection made with GateRules::shard_key (ZeroMQ
// hands it out as the "User-Id" property of each message from it); a
// worker's connection has its public key (Z85) as its user id.
inline constexpr char kShardUserId[] = "shard";

// A connection that has not joined may be closed to make room for a new one
// once it has been open this long (a peer says Hello at once).
inline constexpr std::chrono::milliseconds kJoinGrace{1000};

class Gatekeeper {
 public:
  // Binds the handler in `context` and reads the events of the monitor at
  // `monitor_address` (which counts open connections). It must exist before
  // the guarded socket binds and outlive it: a context without a handler
  // lets every CURVE key in. Unavailable when another handler is bound.
  static Result<std::unique_ptr<Gatekeeper>> Start(zmq::context_t& context, GateRules rules,
                                                   const std::string& monitor_address);
  ~Gatekeeper();

  Gatekeeper(const Gatekeeper&) = delete;
  Gatekeeper& operator=(const Gatekeeper&) = delete;

  // Connections refused so far.
  int64_t refused() const { return refused_.load(); }

  // Counts `bytes` (an overestimate of their size on the wire) that the
  // guarded socket's owner received from connection `fd`: what the
  // connection sent beyond them is still in ZeroMQ's hands. Thread-safe.
  void Delivered(int fd, int64_t bytes);
  // Marks connection `fd` as one whose peer joined: it is never closed to
  // make room for a new one. Thread-safe.
  void Admit(int fd);
  // The number of connection `fd`, unique for the handler's life (see
  // Endpoint::LastSenderConnection); 0 when it is not open. Thread-safe.
  int64_t SerialOf(int fd);
  // The numbers of admitted connections that closed since the last call,
  // oldest first (at most kClosedKept). Thread-safe.
  std::vector<int64_t> TakeClosed();
  // Whether the connection numbered `serial` is closed or its peer has
  // closed it, as the kernel tells before ZeroMQ's events do (TCP's
  // CLOSE_WAIT and later states); false for a live one, or one that is
  // not TCP. Thread-safe.
  bool PeerClosed(int64_t serial);
  // Replaces the connection limit and the unread bound of the rules (a
  // server shard learns its slice's size after it binds). Thread-safe.
  void SetLimits(int64_t max_connections, int64_t max_unread_bytes) {
    max_connections_ = max_connections;
    max_unread_ = max_unread_bytes;
  }

 private:
  using Clock = std::chrono::steady_clock;
  struct Connection {
    Clock::time_point opened;
    std::string peer;       // its address, as getpeername() tells it
    int64_t delivered = 0;  // bytes received from it, frames' overhead included
    int64_t received = 0;   // bytes the kernel received on it, at the last check
    bool admitted = false;
    int64_t serial = 0;  // which connection it is (SerialOf)
  };
  // Closed connections remembered for TakeClosed at most; beyond, the
  // oldest are forgotten (their peers are then found out by their silence).
  static constexpr size_t kClosedKept = 4096;

  Gatekeeper(GateRules rules, zmq::socket_t zap, zmq::socket_t monitor);
  void Loop();
  void DrainMonitor();
  void Answer(std::vector<zmq::message_t>& request);
  // Logs a refusal at warning level once per `peer` (key or address).
  void LogRefusal(const std::string& peer, const std::string& why);
  // Closes the connections whose bytes not yet delivered as whole messages
  // passed rules_.max_unread_bytes: a message that never ends (ZeroMQ holds
  // a multipart message unseen until its last frame) or one too many.
  void CheckUnread();
  // Makes room for a new connection from `host` (an address without its
  // port), with open_ full; false when it finds none to close.
  bool MakeRoom(const std::string& host);
  // Closes the oldest connection that has not joined and has been open for
  // kJoinGrace; false when there is none.
  bool EvictOldestPending();
  // A flood that reconnects faster than kJoinGrace keeps every connection
  // younger than it. Closes the oldest connection not joined of the host
  // that holds the most of them, when that is not `host` and it holds more
  // than `host` (the newcomer counted): a host takes slots from others only
  // down to an even share, so a flooding host cannot take the place of a
  // worker that is joining from another, while that worker takes one of
  // the flood's. False when no host holds more.
  bool EvictFromCrowdedHost(const std::string& host);
  // Shuts connection `fd` down (ZeroMQ then closes it and frees what it
  // held) when it is still the one opened from `connection.peer`.
  void Drop(int fd, const Connection& connection, const std::string& why);
  // Remembers that `connection` closed, when its peer had joined.
  // REQUIRES: mutex_ held.
  void NoteClosed(const Connection& connection);

  GateRules rules_;
  zmq::socket_t zap_;
  zmq::socket_t monitor_;
  std::mutex mutex_;                // guards open_
  std::map<int, Connection> open_;  // the connections open now, by descriptor
  int64_t last_serial_ = 0;         // the number of the connection accepted last
  std::vector<int64_t> closed_;     // admitted connections closed, for TakeClosed
  Clock::time_point last_check_;
  std::set<std::string> logged_;
  std::atomic<int64_t> refused_{0};
  std::atomic<int64_t> max_connections_;  // the rules' own, until SetLimits
  std::atomic<int64_t> max_unread_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace dmlps::net

#endif  // DMLPS_NET_GATEKEEPER_H_
