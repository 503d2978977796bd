#include "dmlps/net/endpoint.h"

#include <fmt/format.h>
#include <sys/random.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "net/gatekeeper.h"

namespace dmlps::net {
namespace {

// A guarded server drops connections whose handshake takes longer than
// this, so that half-open connections cannot hold its connection slots.
constexpr int kHandshakeMs = 10000;
// Handshakes that fail without a reason, in a row, before a client
// concludes that the server cannot read its hello (a wrong server key, or
// CURVE on one side only).
constexpr int64_t kSilentHandshakeFailures = 3;
// What a frame costs on the wire beyond its bytes, at most: its ZMTP
// header, with CURVE's command name, nonce and MAC.
constexpr int64_t kFrameOverhead = 64;
// How long Rebind waits for ZeroMQ to close the old listener.
constexpr std::chrono::milliseconds kRebindWait{2000};

// Sets a CURVE key option from Z85 text (ZeroMQ wants its terminating NUL).
void SetKey(zmq::socket_t& socket, int option, const std::string& z85) {
  if (zmq_setsockopt(socket.handle(), option, z85.c_str(), z85.size() + 1) != 0) {
    throw zmq::error_t();
  }
}

// Starts a PAIR-socket monitor of `socket` for `events`; returns its address,
// unique in the process (a closed socket's name may linger while its
// successor reuses the memory, so the address alone would not do).
std::string Monitor(zmq::socket_t& socket, int events) {
  static std::atomic<int64_t> serial{0};
  const std::string address =
      fmt::format("inproc://dmlps-monitor-{}-{}", fmt::ptr(socket.handle()), serial++);
  if (zmq_socket_monitor(socket.handle(), address.c_str(), events) != 0) throw zmq::error_t();
  return address;
}

// A ROUTER numbers each peer that brings no routing id of its own with a
// zero byte and a counter, and aborts the process (a libzmq assertion) when
// the number it hands out is one a peer already chose for itself. The
// counter starts at a value libzmq draws from the C library's rand(), which
// nothing seeds: the same numbers in every run, so any peer could take them
// ahead. Seeding rand() from the kernel before the first ROUTER exists
// makes the start a 32-bit secret; the numbers never go on the wire, so a
// peer can only guess them (see SECURITY in dmlps(7)).
void SeedRoutingIds() {
  static std::once_flag once;
  std::call_once(once, [] {
    unsigned int seed = 0;
    if (getrandom(&seed, sizeof seed, 0) != static_cast<ssize_t>(sizeof seed)) {
      seed = static_cast<unsigned int>(std::chrono::steady_clock::now().time_since_epoch().count() ^
                                       getpid());
    }
    std::srand(seed);
  });
}

// A tcp:// address whose host is an IPv6 literal ("[::1]") or every
// interface ("*"): ZeroMQ speaks IPv6 on a socket only when asked to, and a
// wildcard then listens on both families (IPv4 alone where the host has no
// IPv6).
bool WantsIpv6(std::string_view address) {
  constexpr std::string_view kTcp = "tcp://";
  if (address.substr(0, kTcp.size()) != kTcp) return false;
  const std::string_view host = address.substr(kTcp.size());
  return host.starts_with("[") || host.starts_with("*:");
}

void ConfigureCommon(zmq::socket_t& socket, std::string_view address) {
  if (WantsIpv6(address)) socket.set(zmq::sockopt::ipv6, 1);
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

Endpoint::Endpoint(std::unique_ptr<zmq::socket_t> socket) : socket_(std::move(socket)) {}
Endpoint::Endpoint(Endpoint&&) noexcept = default;
Endpoint& Endpoint::operator=(Endpoint&& other) noexcept {
  if (this == &other) return *this;
  // The guarded socket closes before its guard goes.
  monitor_.reset();
  socket_.reset();
  gatekeeper_ = std::move(other.gatekeeper_);
  socket_ = std::move(other.socket_);
  monitor_ = std::move(other.monitor_);
  curve_ = other.curve_;
  last_from_shard_ = other.last_from_shard_;
  last_key_ = std::move(other.last_key_);
  last_source_ = other.last_source_;
  failed_handshakes_ = other.failed_handshakes_;
  address_ = std::move(other.address_);
  return *this;
}
Endpoint::~Endpoint() = default;

int64_t Endpoint::refused_connections() const {
  return gatekeeper_ != nullptr ? gatekeeper_->refused() : 0;
}

Result<Endpoint> Endpoint::Bind(zmq::context_t& context, const std::string& address,
                                const BindOptions& options) {
  const bool curve = !options.curve_secret.empty();
  if (curve && options.allowed_keys.empty()) {
    return Status::Config("CURVE with no allowed keys would admit no worker");
  }
  if (options.max_frame_bytes < 1 || options.max_connections < 0 || options.max_unread_bytes < 0 ||
      options.max_queued_messages < 0 || options.max_queued_messages > (int64_t{1} << 30)) {
    return Status::InvalidArgument("frame and connection limits must be positive");
  }
  SeedRoutingIds();
  try {
    auto socket = std::make_unique<zmq::socket_t>(context, zmq::socket_type::router);
    ConfigureCommon(*socket, address);
    socket->set(zmq::sockopt::maxmsgsize, options.max_frame_bytes);
    // Sending to a worker that has gone must fail loudly, not vanish.
    socket->set(zmq::sockopt::router_mandatory, 1);
    if (options.max_queued_messages > 0) {
      socket->set(zmq::sockopt::sndhwm, static_cast<int>(options.max_queued_messages));
    }
    // A peer whose host vanished (no FIN ever comes) is found out by
    // ZeroMQ's own heartbeat, which the peer's I/O thread answers however
    // long its computation: its connection closes and the owner learns of
    // it (TakeClosedConnections) in kPeerHeartbeatTimeout, not by silence.
    socket->set(zmq::sockopt::heartbeat_ivl, static_cast<int>(kPeerHeartbeat.count()));
    socket->set(zmq::sockopt::heartbeat_timeout, static_cast<int>(kPeerHeartbeatTimeout.count()));
    std::unique_ptr<Gatekeeper> gatekeeper;
    if (curve || options.max_connections > 0 || options.max_unread_bytes > 0) {
      if (curve) {
        socket->set(zmq::sockopt::curve_server, true);
        SetKey(*socket, ZMQ_CURVE_SECRETKEY, options.curve_secret);
      }
      // With a domain set, ZeroMQ asks the handler about every connection,
      // plaintext ones too.
      socket->set(zmq::sockopt::zap_domain, kZapDomain);
      socket->set(zmq::sockopt::handshake_ivl, kHandshakeMs);
      // Refuse rather than admit when the handler is missing (where this
      // libzmq has the option; otherwise the handler's lifetime ensures it).
      const int enforce = 1;
      (void)zmq_setsockopt(socket->handle(), 93 /* ZMQ_ZAP_ENFORCE_DOMAIN */, &enforce,
                           sizeof enforce);
      const std::string monitor = Monitor(*socket, ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED);
      GateRules rules{curve, options.allowed_keys, options.max_connections,
                      options.max_unread_bytes, options.shard_key};
      DMLPS_ASSIGN_OR_RETURN(gatekeeper, Gatekeeper::Start(context, std::move(rules), monitor));
    }
    socket->bind(address);
    Endpoint endpoint(std::move(socket));
    endpoint.gatekeeper_ = std::move(gatekeeper);
    endpoint.curve_ = curve;
    endpoint.address_ = endpoint.socket_->get(zmq::sockopt::last_endpoint);
    return endpoint;
  } catch (const zmq::error_t& e) {
    return FromZmq(e, "cannot bind " + address);
  }
}

Result<Endpoint> Endpoint::Connect(zmq::context_t& context, const std::string& address,
                                   const ConnectOptions& options) {
  const bool curve = !options.curve_secret.empty();
  if (curve != !options.curve_server_key.empty()) {
    return Status::InvalidArgument(
        "CURVE needs both this client's secret key and the server's key");
  }
  try {
    auto socket = std::make_unique<zmq::socket_t>(context, zmq::socket_type::dealer);
    ConfigureCommon(*socket, address);
    if (curve) {
      char public_key[41] = {};
      if (zmq_curve_public(public_key, options.curve_secret.c_str()) != 0) {
        return Status::InvalidArgument("not a CURVE secret key");
      }
      SetKey(*socket, ZMQ_CURVE_SERVERKEY, options.curve_server_key);
      SetKey(*socket, ZMQ_CURVE_PUBLICKEY, public_key);
      SetKey(*socket, ZMQ_CURVE_SECRETKEY, options.curve_secret);
    }
    // Handshake events tell a refused client apart from a silent server.
    const std::string monitor_address =
        Monitor(*socket, ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                             ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);
    auto monitor = std::make_unique<zmq::socket_t>(context, zmq::socket_type::pair);
    monitor->set(zmq::sockopt::linger, 0);
    monitor->connect(monitor_address);
    socket->connect(address);
    Endpoint endpoint(std::move(socket));
    endpoint.monitor_ = std::move(monitor);
    endpoint.curve_ = curve;
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
      if (!socket_->send(frames[i], flags)) return Status::Unavailable(kSendQueueFull);
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
                                 std::shared_ptr<const std::vector<float>> values, int64_t offset,
                                 int64_t count, int64_t chunk_bytes, const proto::Body* then) {
  if (offset < 0 || count < 0 || offset + count > static_cast<int64_t>(values->size())) {
    return Status::InvalidArgument("a payload range outside its tensor");
  }
  const proto::ChunkLayout layout = proto::ChunkLayout::ForBytes(count, chunk_bytes);
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
    if (count > 0) proto::AppendRange(std::move(values), offset, layout.size, &payload);
    DMLPS_RETURN_IF_ERROR(SendMessage(identity, header, std::move(payload)));
    return then != nullptr ? SendMessage(identity, *then) : Status::Ok();
  }
  DMLPS_RETURN_IF_ERROR(SendMessage(identity, header));
  if (then != nullptr) DMLPS_RETURN_IF_ERROR(SendMessage(identity, *then));
  for (int64_t i = 0; i < chunks; ++i) {
    Frames payload;
    proto::AppendRange(values, offset + layout.begin(i), layout.end(i) - layout.begin(i), &payload);
    DMLPS_RETURN_IF_ERROR(SendMessage(identity, proto::Chunk{i}, std::move(payload)));
  }
  return Status::Ok();
}

Result<int> Endpoint::WaitAny(std::span<Endpoint* const> endpoints,
                              std::chrono::milliseconds timeout) {
  std::vector<zmq_pollitem_t> items;
  items.reserve(endpoints.size());
  for (Endpoint* e : endpoints) items.push_back({e->socket_->handle(), 0, ZMQ_POLLIN, 0});
  const int rc = zmq_poll(items.data(), static_cast<int>(items.size()),
                          static_cast<long>(std::max<int64_t>(timeout.count(), 0)));
  if (rc < 0) {
    if (zmq_errno() == EINTR) return -1;
    return Status::IOError(std::string("poll failed: ") + zmq_strerror(zmq_errno()));
  }
  for (size_t i = 0; i < items.size(); ++i) {
    if ((items[i].revents & ZMQ_POLLIN) != 0) return static_cast<int>(i);
  }
  return -1;
}

Result<bool> Endpoint::Receive(Frames* frames, std::chrono::milliseconds timeout) {
  frames->clear();
  // Handshake events wake the poll too; the wait goes on until a message
  // comes or the time is up.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    zmq_pollitem_t items[2] = {
        {socket_->handle(), 0, ZMQ_POLLIN, 0},
        {monitor_ != nullptr ? monitor_->handle() : nullptr, 0, ZMQ_POLLIN, 0}};
    int rc = zmq_poll(items, monitor_ != nullptr ? 2 : 1,
                      static_cast<long>(std::max<int64_t>(left.count(), 0)));
    if (rc < 0) {
      if (zmq_errno() == EINTR) return false;
      return Status::IOError(std::string("poll failed: ") + zmq_strerror(zmq_errno()));
    }
    if (rc == 0) return false;
    if (monitor_ != nullptr && (items[1].revents & ZMQ_POLLIN) != 0) {
      DMLPS_RETURN_IF_ERROR(CheckHandshakes());
    }
    if ((items[0].revents & ZMQ_POLLIN) != 0) break;
    if (left.count() <= 0) return false;
  }
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
  if (gatekeeper_ != nullptr && !frames->empty()) {
    // The connection it came from (ZMQ_SRCFD), and its size there; a
    // ROUTER's first frame, the peer's identity, never was on the wire.
    last_source_ = zmq_msg_get(frames->back().handle(), ZMQ_SRCFD);
    int64_t bytes = 0;
    for (size_t i = 1; i < frames->size(); ++i) {
      bytes += static_cast<int64_t>((*frames)[i].size()) + kFrameOverhead;
    }
    if (last_source_ >= 0) gatekeeper_->Delivered(last_source_, bytes);
    if (curve_) {
      const char* user = zmq_msg_gets(frames->back().handle(), "User-Id");
      last_from_shard_ = user != nullptr && std::strcmp(user, kShardUserId) == 0;
      last_key_ = user != nullptr && !last_from_shard_ ? user : "";
    }
  }
  return !frames->empty();
}

Status Endpoint::SetConnectionLimits(int64_t max_connections, int64_t max_unread_bytes) {
  if (max_connections < 0 || max_unread_bytes < 0) {
    return Status::InvalidArgument("connection limits must not be negative");
  }
  if (gatekeeper_ == nullptr) {
    return Status::InvalidArgument("an endpoint bound without a connection guard cannot get one");
  }
  gatekeeper_->SetLimits(max_connections, max_unread_bytes);
  return Status::Ok();
}

Status Endpoint::Rebind(int64_t max_frame_bytes, int64_t max_queued_messages) {
  if (max_frame_bytes < 1 || max_queued_messages < 1 || max_queued_messages > (int64_t{1} << 30)) {
    return Status::InvalidArgument("frame and queue limits must be positive");
  }
  try {
    socket_->set(zmq::sockopt::maxmsgsize, max_frame_bytes);
    // Open connections take a new queue bound at once (ZeroMQ updates their pipes).
    socket_->set(zmq::sockopt::sndhwm, static_cast<int>(max_queued_messages));
    socket_->unbind(address_);
  } catch (const zmq::error_t& e) {
    return FromZmq(e, "cannot unbind " + address_);
  }
  // The old listener closes in ZeroMQ's I/O thread, a moment later: until
  // then its port is taken, and an ipc listener removes its file as it goes.
  const auto deadline = std::chrono::steady_clock::now() + kRebindWait;
  const bool ipc = address_.starts_with("ipc://");
  while (true) {
    const bool gone = !ipc || access(address_.c_str() + 6, F_OK) != 0;
    try {
      if (gone) {
        socket_->bind(address_);
        return Status::Ok();
      }
    } catch (const zmq::error_t& e) {
      if (e.num() != EADDRINUSE || std::chrono::steady_clock::now() >= deadline) {
        return FromZmq(e, "cannot bind " + address_ + " again");
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::Unavailable("cannot bind " + address_ + " again: the old listener stays");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

Status Endpoint::SetSendQueueLimit(int64_t max_queued_messages) {
  if (max_queued_messages < 1 || max_queued_messages > (int64_t{1} << 30)) {
    return Status::InvalidArgument("the send queue's limit must be positive");
  }
  try {
    socket_->set(zmq::sockopt::sndhwm, static_cast<int>(max_queued_messages));
  } catch (const zmq::error_t& e) {
    return FromZmq(e, "cannot bound the send queue");
  }
  return Status::Ok();
}

int64_t Endpoint::LastSenderConnection() const {
  return gatekeeper_ != nullptr && last_source_ >= 0 ? gatekeeper_->SerialOf(last_source_) : 0;
}

bool Endpoint::ConnectionClosed(int64_t connection) const {
  return gatekeeper_ != nullptr && connection != 0 && gatekeeper_->PeerClosed(connection);
}

std::vector<int64_t> Endpoint::TakeClosedConnections() {
  return gatekeeper_ != nullptr ? gatekeeper_->TakeClosed() : std::vector<int64_t>{};
}

void Endpoint::AdmitSender() {
  if (gatekeeper_ != nullptr && last_source_ >= 0) gatekeeper_->Admit(last_source_);
}

Status Endpoint::CheckHandshakes() {
  while (true) {
    zmq::message_t event;
    try {
      if (!monitor_->recv(event, zmq::recv_flags::dontwait)) return Status::Ok();
      if (event.more()) {
        zmq::message_t endpoint;  // the address, known already
        (void)monitor_->recv(endpoint, zmq::recv_flags::dontwait);
      }
    } catch (const zmq::error_t& e) {
      return FromZmq(e, "monitor");
    }
    if (event.size() < 6) continue;
    uint16_t id = 0;
    uint32_t value = 0;
    std::memcpy(&id, event.data(), sizeof id);
    std::memcpy(&value, static_cast<const char*>(event.data()) + 2, sizeof value);
    switch (id) {
      case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
        failed_handshakes_ = 0;
        break;
      case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
        // ZAP tells only a status code: a server refuses a plaintext client
        // only for having too many connections.
        if (!curve_) {
          return Status::Unavailable("the server at " + address_ +
                                     " refused the connection: it has too many connections");
        }
        return Status::Config("the server at " + address_ + " refused this client's key (status " +
                              std::to_string(value) +
                              "): it is not in the server's --curve-allow folder (or the server "
                              "has too many connections)");
      case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
        if (value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH) {
          return Status::Config(curve_ ? "the server at " + address_ +
                                             " does not speak CURVE; this client does"
                                       : "the server at " + address_ +
                                             " requires CURVE: give this client --curve-secret and "
                                             "--curve-server-key");
        }
        return Status::Config("the handshake with the server at " + address_ +
                              " failed (protocol error " + fmt::format("{:#x}", value) +
                              "); is --curve-server-key the server's public key?");
      case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
        // A server that cannot read this client's hello (another mechanism,
        // or another server key) may just hang up before saying why.
        if (++failed_handshakes_ >= kSilentHandshakeFailures) {
          return Status::Config("the server at " + address_ + " hung up " +
                                std::to_string(failed_handshakes_) + " handshakes in a row: " +
                                (curve_
                                     ? std::string("is --curve-server-key the server's public key?")
                                     : std::string("it probably requires CURVE (give this client "
                                                   "--curve-secret and --curve-server-key)")));
        }
        break;
      default:
        break;
    }
  }
}

zmq::message_t CopyFrame(const zmq::message_t& frame) {
  return zmq::message_t(frame.data(), frame.size());
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

}  // namespace dmlps::net
