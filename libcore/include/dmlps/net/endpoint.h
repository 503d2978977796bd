// ZeroMQ sockets as dmlps uses them: a ROUTER that a server binds, a DEALER
// that a worker connects. Every socket has a bounded linger and every receive
// a timeout, so a missing peer is an error value, never a hang.
#ifndef DMLPS_NET_ENDPOINT_H_
#define DMLPS_NET_ENDPOINT_H_

#include <chrono>
#include <memory>
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
inline constexpr int64_t kMaxFrameBytes = int64_t{256} << 20;

class Endpoint {
 public:
  // Binds a ROUTER to `address` ("tcp://127.0.0.1:5555", "tcp://127.0.0.1:*",
  // "ipc:///path"). Unavailable when the address is taken, InvalidArgument
  // when ZeroMQ cannot parse it.
  static Result<Endpoint> Bind(zmq::context_t& context, const std::string& address);
  // Connects a DEALER to `address`. Connecting succeeds even with no server
  // there; the first receive tells.
  static Result<Endpoint> Connect(zmq::context_t& context, const std::string& address);

  Endpoint(Endpoint&&) = default;
  Endpoint& operator=(Endpoint&&) = default;

  // The address actually bound, with the port resolved for "tcp://host:*".
  std::string address() const { return address_; }

  // Sends one multipart message; a ROUTER's first frame names the peer.
  // Unavailable when the peer is gone or not reading.
  Status Send(Frames& frames);

  // Sends a message with `body` as its header, after `identity` on a ROUTER.
  Status SendMessage(const zmq::message_t* identity, const proto::Body& body,
                     Frames payload = {});

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
                         const proto::Body* then = nullptr);

  // Waits up to `timeout` for one multipart message; returns false when none
  // arrived. Interrupted waits (signals) also return false.
  Result<bool> Receive(Frames* frames, std::chrono::milliseconds timeout);

  // Messages not sent yet are dropped when the socket closes, rather than
  // held for the linger time (a peer known to be gone).
  void DiscardUnsent() { socket_->set(zmq::sockopt::linger, 0); }

 private:
  explicit Endpoint(std::unique_ptr<zmq::socket_t> socket) : socket_(std::move(socket)) {}
  std::unique_ptr<zmq::socket_t> socket_;
  std::string address_;
};

// Copies a ROUTER identity frame, for replying later.
zmq::message_t CopyFrame(const zmq::message_t& frame);

}  // namespace dmlps::net

#endif  // DMLPS_NET_ENDPOINT_H_
