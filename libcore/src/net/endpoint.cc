#include "dmlps/net/endpoint.h"

#include <cerrno>

namespace dmlps::net {
namespace {

void ConfigureCommon(zmq::socket_t& socket) {
  socket.set(zmq::sockopt::linger, static_cast<int>(kLinger.count()));
  socket.set(zmq::sockopt::maxmsgsize, kMaxFrameBytes);
  socket.set(zmq::sockopt::sndhwm, 100000);
  socket.set(zmq::sockopt::rcvhwm, 100000);
}

Status FromZmq(const zmq::error_t& e, const std::string& what) {
  switch (e.num()) {
    case EADDRINUSE:
    case EADDRNOTAVAIL:
    case EHOSTUNREACH:
    case EAGAIN:
      return Status::Unavailable(what + ": " + e.what());
    case EINVAL:
    case EPROTONOSUPPORT:
    case ENOENT:
      return Status::InvalidArgument(what + ": " + e.what());
    default:
      return Status::IOError(what + ": " + e.what());
  }
}

}  // namespace

Result<Endpoint> Endpoint::Bind(zmq::context_t& context, const std::string& address) {
  try {
    auto socket = std::make_unique<zmq::socket_t>(context, zmq::socket_type::router);
    ConfigureCommon(*socket);
    // Sending to a worker that has gone must fail loudly, not vanish.
    socket->set(zmq::sockopt::router_mandatory, 1);
    socket->bind(address);
    Endpoint endpoint(std::move(socket));
    endpoint.address_ = endpoint.socket_->get(zmq::sockopt::last_endpoint);
    return endpoint;
  } catch (const zmq::error_t& e) {
    return FromZmq(e, "cannot bind " + address);
  }
}

Result<Endpoint> Endpoint::Connect(zmq::context_t& context, const std::string& address) {
  try {
    auto socket = std::make_unique<zmq::socket_t>(context, zmq::socket_type::dealer);
    ConfigureCommon(*socket);
    socket->connect(address);
    Endpoint endpoint(std::move(socket));
    endpoint.address_ = address;
    return endpoint;
  } catch (const zmq::error_t& e) {
    return FromZmq(e, "cannot connect to " + address);
  }
}

Status Endpoint::Send(Frames& frames) {
  try {
    for (size_t i = 0; i < frames.size(); ++i) {
      zmq::send_flags flags = zmq::send_flags::dontwait;
      if (i + 1 < frames.size()) flags = flags | zmq::send_flags::sndmore;
      if (!socket_->send(frames[i], flags)) return Status::Unavailable("send queue is full");
    }
    return Status::Ok();
  } catch (const zmq::error_t& e) {
    return FromZmq(e, "send failed");
  }
}

Status Endpoint::SendMessage(const zmq::message_t* identity, const proto::Body& body,
                             Frames payload) {
  Frames frames;
  frames.reserve(payload.size() + 2);
  if (identity != nullptr) frames.push_back(CopyFrame(*identity));
  frames.push_back(proto::EncodeHeader(body));
  for (zmq::message_t& m : payload) frames.push_back(std::move(m));
  return Send(frames);
}

Result<bool> Endpoint::Receive(Frames* frames, std::chrono::milliseconds timeout) {
  frames->clear();
  zmq_pollitem_t item{socket_->handle(), 0, ZMQ_POLLIN, 0};
  int rc = zmq_poll(&item, 1, static_cast<long>(timeout.count()));
  if (rc < 0) {
    if (zmq_errno() == EINTR) return false;
    return Status::IOError(std::string("poll failed: ") + zmq_strerror(zmq_errno()));
  }
  if (rc == 0) return false;
  try {
    while (true) {
      zmq::message_t frame;
      if (!socket_->recv(frame, zmq::recv_flags::dontwait)) break;
      const bool more = frame.more();
      frames->push_back(std::move(frame));
      if (!more) break;
    }
  } catch (const zmq::error_t& e) {
    if (e.num() == EINTR) return false;
    return FromZmq(e, "receive failed");
  }
  return !frames->empty();
}

zmq::message_t CopyFrame(const zmq::message_t& frame) {
  return zmq::message_t(frame.data(), frame.size());
}

}  // namespace dmlps::net
