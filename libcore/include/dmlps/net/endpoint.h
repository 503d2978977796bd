// ZeroMQ sockets as dmlps uses them: a ROUTER that a server binds, a DEALER
// that a worker connects. Every socket has a bounded linger and every receive
// a timeout, so a missing peer is an error value, never a hang.
#ifndef DMLPS_NET_ENDPOINT_H_
#define DMLPS_NET_ENDPOINT_H_

#include <chrono>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "dmlps/base/status.h"
#include "dmlps/proto/codec.h"

namespace dmlps::net {

using Frames = std::vector<zmq::message_t>;

// How long a closing socket may keep trying to deliver what is queued.
inline constexpr std::chrono::milliseconds kLinger{2000};
// Frames larger than this are refused by ZeroMQ before they reach us.
// A bound endpoint pings each connection this often (ZeroMQ's heartbeat),
// and closes one that sent nothing for kPeerHeartbeatTimeout after a ping:
// its host vanished. Any message counts, so one frame must not take longer
// than the timeout to arrive (a 4 MiB chunk needs 0.4 MB/s).
inline constexpr std::chrono::milliseconds kPeerHeartbeat{1000};
inline constexpr std::chrono::milliseconds kPeerHeartbeatTimeout{10000};
inline constexpr int64_t kMaxFrameBytes = int64_t{256} << 20;
// The message of the Unavailable that Send returns when the peer's send
// queue is full (it is not reading for now), as opposed to a peer gone.
inline constexpr char kSendQueueFull[] = "send queue is full";

class Gatekeeper;

// What a server's ROUTER admits. Connections are judged at the handshake by
// a ZAP handler of the endpoint's own (see Gatekeeper), so one that is
// refused never reaches the ROUTER and leaves nothing behind.
struct BindOptions {
  // The server's CURVE secret key (Z85); empty: plaintext. With CURVE only
  // clients whose public key is in allowed_keys get in: never all of them.
  std::string curve_secret;
  std::set<std::string> allowed_keys;
  // Frames larger than this make ZeroMQ drop the connection (ZMQ_MAXMSGSIZE).
  int64_t max_frame_bytes = kMaxFrameBytes;
  // Connections open at once, handshakes included; beyond it a new one
  // takes the place of the oldest that has not joined (see AdmitSender) and
  // has been open for a second, or else is refused at the handshake.
  // 0: no limit.
  int64_t max_connections = 0;
  // Bytes a connection may have sent beyond the whole messages received
  // from it; beyond it the connection is closed and a warning names its
  // address. ZeroMQ holds a multipart message, unseen, until its last
  // frame: this bounds one that never ends, whose frames each pass
  // max_frame_bytes. Checked on TCP connections only. 0: no limit.
  int64_t max_unread_bytes = 0;
  // Messages queued for one peer at most (ZMQ_SNDHWM); a send beyond it
  // fails with Unavailable, so that a peer that does not read cannot make
  // the server hold more. 0: ZeroMQ's queue of 100000 messages.
  int64_t max_queued_messages = 0;
  // With CURVE: the public key of the server shards beyond 0, admitted
  // besides allowed_keys (sharded servers share one key pair, so this is
  // the server's own public key); messages over such a connection are
  // marked (LastSenderMayBeShard). Empty: none.
  std::string shard_key;
};

// How a worker's DEALER talks to a CURVE server; both empty: plaintext.
struct ConnectOptions {
  std::string curve_secret;      // this client's secret key (Z85)
  std::string curve_server_key;  // the server's public key (Z85)
};

// Who sent a message, as far as a guarded endpoint can tell.
struct Sender {
  std::string key;         // its connection's CURVE key (LastSenderKey); empty: none
  int64_t connection = 0;  // its connection's number (LastSenderConnection); 0: unknown
};

class Endpoint {
 public:
  // Binds a ROUTER to `address` ("tcp://127.0.0.1:5555", "tcp://127.0.0.1:*",
  // "ipc:///path"). Unavailable when the address is taken, InvalidArgument
  // when ZeroMQ cannot parse it.
  // Unavailable also when `options` need a ZAP handler and the context has
  // one already (one guarded ROUTER per context).
  static Result<Endpoint> Bind(zmq::context_t& context, const std::string& address,
                               const BindOptions& options = {});
  // Connects a DEALER to `address`. Connecting succeeds even with no server
  // there; the first receive tells, and Receive also reports a server that
  // refuses this client at the handshake (its key, or too many connections).
  static Result<Endpoint> Connect(zmq::context_t& context, const std::string& address,
                                  const ConnectOptions& options = {});

  Endpoint(Endpoint&&) noexcept;
  Endpoint& operator=(Endpoint&&) noexcept;
  ~Endpoint();

  // The address actually bound, with the port resolved for "tcp://host:*".
  std::string address() const { return address_; }

  // Sends one multipart message; a ROUTER's first frame names the peer.
  // Unavailable when the peer is gone or not reading.
  Status Send(Frames& frames);

  // Sends a message with `body` as its header, after `identity` on a ROUTER.
  Status SendMessage(const zmq::message_t* identity, const proto::Body& body, Frames payload = {});

  // Sends a Push or Model header with `values` as its payload, without
  // copying: in the same message when it fits one chunk of `chunk_bytes`,
  // else streamed: the header announcing the chunks (its chunks and
  // chunk_floats set here), then one Chunk message per chunk, in order.
  // `then`, when given, is sent right after the header, before any chunk
  // (a worker's next Pull: the server may then stream the model back while
  // the gradient is still arriving). InvalidArgument for a header of
  // another type.
  Status SendWithPayload(const zmq::message_t* identity, proto::Body header,
                         std::shared_ptr<const std::vector<float>> values, int64_t chunk_bytes,
                         const proto::Body* then = nullptr) {
    const auto size = static_cast<int64_t>(values->size());
    return SendWithPayload(identity, std::move(header), std::move(values), 0, size, chunk_bytes,
                           then);
  }
  // The same for the `count` floats of `values` from `offset` on: a slice
  // for one server shard, still without copying.
  Status SendWithPayload(const zmq::message_t* identity, proto::Body header,
                         std::shared_ptr<const std::vector<float>> values, int64_t offset,
                         int64_t count, int64_t chunk_bytes, const proto::Body* then = nullptr);

  // Waits up to `timeout` for one multipart message; returns false when none
  // arrived. Interrupted waits (signals) also return false. On a connected
  // endpoint, Config when the server refused this client's key or its lack
  // of one, Unavailable when it refused the connection as one too many.
  Result<bool> Receive(Frames* frames, std::chrono::milliseconds timeout);

  // Waits up to `timeout` until one of `endpoints` has a message to
  // receive; returns its index, or -1 when none has (or a signal came).
  static Result<int> WaitAny(std::span<Endpoint* const> endpoints,
                             std::chrono::milliseconds timeout);

  // Replaces a guarded endpoint's connection limit and unread bound
  // (BindOptions::max_connections, max_unread_bytes): a server shard learns
  // its slice's size only after it binds. The frame limit and the send
  // queue stay as bound (ZeroMQ keeps a listener's options). InvalidArgument
  // for a negative limit, or on an endpoint bound without a guard.
  Status SetConnectionLimits(int64_t max_connections, int64_t max_unread_bytes);

  // Whether the message Receive returned last may come from a server
  // shard: false only on a CURVE endpoint when its connection was not made
  // with BindOptions::shard_key, so that a worker's key cannot register a
  // shard. Without CURVE nothing tells peers apart: true.
  bool LastSenderMayBeShard() const { return !curve_ || last_from_shard_; }
  // The CURVE public key (Z85) of the worker connection the message Receive
  // returned last came over; empty without CURVE or from a shard's.
  const std::string& LastSenderKey() const { return last_key_; }
  // A number naming the connection the message Receive returned last came
  // over, never given to another connection of this endpoint; 0 on an
  // unguarded endpoint or when the connection closed already.
  int64_t LastSenderConnection() const;
  // The connections of admitted peers (AdmitSender) that closed since the
  // last call, by LastSenderConnection's number: their peer is gone (its
  // process ended, or its host or ZeroMQ's heartbeat closed the
  // connection), so no one need wait for its silence. Empty on an
  // unguarded endpoint.
  std::vector<int64_t> TakeClosedConnections();
  // Whether connection `connection` (LastSenderConnection) is closed or
  // closing at its peer's end, as the kernel tells at once: a Hello from a
  // worker started again may come before the old connection's loss is
  // among TakeClosedConnections. False on an unguarded endpoint.
  bool ConnectionClosed(int64_t connection) const;
  // Both of the above for the message Receive returned last.
  Sender LastSender() const { return {last_key_, LastSenderConnection()}; }

  // Applies a new frame limit and send queue bound (BindOptions::
  // max_frame_bytes, max_queued_messages) to the connections made from now
  // on, and the queue bound to those open, by binding the same address
  // again: ZeroMQ gives a listener's connections the options it had when it
  // bound. A server shard learns its slice's size only after it binds; its
  // workers learn its address later still. InvalidArgument for limits out
  // of range; Unavailable when the address cannot be bound again.
  Status Rebind(int64_t max_frame_bytes, int64_t max_queued_messages);
  // Bounds the messages queued for each peer at `max_queued_messages`
  // (BindOptions), open connections included, without binding again.
  Status SetSendQueueLimit(int64_t max_queued_messages);

  // Connections the ZAP handler refused so far (0 on an unguarded endpoint).
  int64_t refused_connections() const;

  // Marks the connection that the message Receive returned last came from
  // as one whose peer joined: a guarded endpoint never closes it to make
  // room for a new connection. Call it for a message that admits its peer.
  void AdmitSender();

  // Messages not sent yet are dropped when the socket closes, rather than
  // held for the linger time (a peer known to be gone).
  void DiscardUnsent() { socket_->set(zmq::sockopt::linger, 0); }

 private:
  explicit Endpoint(std::unique_ptr<zmq::socket_t> socket);
  // Reads the handshake events of a connected endpoint; fails when the
  // server refused this client.
  Status CheckHandshakes();

  // Declared first, so destroyed last: the handler outlives the socket it guards.
  std::unique_ptr<Gatekeeper> gatekeeper_;
  std::unique_ptr<zmq::socket_t> socket_;
  std::unique_ptr<zmq::socket_t> monitor_;  // a connected endpoint's handshake events
  bool curve_ = false;
  bool last_from_shard_ = false;   // the message received last came with the shard key
  std::string last_key_;           // its sender's worker key (LastSenderKey)
  int last_source_ = -1;           // the connection of the message received last
  int64_t failed_handshakes_ = 0;  // in a row, without detail
  std::string address_;
};

// This machine's host name, as a process tells its peers ("unknown" when it
// cannot be read).
std::string HostName();

// Copies a ROUTER identity frame, for replying later.
zmq::message_t CopyFrame(const zmq::message_t& frame);

}  // namespace dmlps::net

#endif  // DMLPS_NET_ENDPOINT_H_
