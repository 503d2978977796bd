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

Status Endpoint::SendWithPayload(const zmq::message_t* identity, proto::Body header,
                                 std::shared_ptr<const std::vector<float>> values,
                                 int64_t chunk_bytes, const proto::Body* then) {
  const proto::ChunkLayout layout =
      proto::ChunkLayout::ForBytes(static_cast<int64_t>(values->size()), chunk_bytes);
  const int64_t chunks = layout.streamed() ? layout.count() : 0;
  const int64_t chunk_floats = layout.streamed() ? layout.chunk_floats : 0;
  if (auto* push = std::get_if<proto::Push>(&header)) {
    push->chunks = chunks;
    push->chunk_floats = chunk_floats;
  } else if (auto* model = std::get_if<proto::Model>(&header)) {
    model->chunks = chunks;
    model->chunk_floats = chunk_floats;
  } else {
    return Status::InvalidArgument("only a Push or a Model carries a tensor");
  }
  if (!layout.streamed()) {
    Frames payload;
    if (!values->empty()) proto::AppendRange(std::move(values), 0, layout.size, &payload);
    DMLPS_RETURN_IF_ERROR(SendMessage(identity, header, std::move(payload)));
    return then != nullptr ? SendMessage(identity, *then) : Status::Ok();
  }
  DMLPS_RETURN_IF_ERROR(SendMessage(identity, header));
  if (then != nullptr) DMLPS_RETURN_IF_ERROR(SendMessage(identity, *then));
  for (int64_t i = 0; i < chunks; ++i) {
    Frames payload;
    proto::AppendRange(values, layout.begin(i), layout.end(i) - layout.begin(i), &payload);
    DMLPS_RETURN_IF_ERROR(SendMessage(identity, proto::Chunk{i}, std::move(payload)));
  }
  return Status::Ok();
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
