#include "net/gatekeeper.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <linux/tcp.h>  // tcp_info with tcpi_bytes_received
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <zmq.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "dmlps/net/curve.h"

namespace dmlps::net {
namespace {

// How often the handler's thread looks whether it should stop.
constexpr long kPollMs = 50;
// How often the bytes each connection has sent are compared with what its
// reader got.
constexpr std::chrono::milliseconds kCheckEvery{50};
// Peers whose refusal is logged at warning level; later ones at debug level,
// so a flood of keys or addresses cannot fill the log or the memory.
constexpr size_t kLoggedPeers = 256;

std::string Text(const zmq::message_t& frame) {
  return std::string(static_cast<const char*>(frame.data()), frame.size());
}

// The address of the peer on connection `fd` ("IP:port"); "" when `fd` is
// no connected socket (any more).
std::string PeerName(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return "";
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&address);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    return fmt::format("{}:{}", text, ntohs(in->sin_port));
  }
  if (address.ss_family == AF_INET6) {
    const auto* in = reinterpret_cast<const sockaddr_in6*>(&address);
    inet_ntop(AF_INET6, &in->sin6_addr, text, sizeof text);
    return fmt::format("[{}]:{}", text, ntohs(in->sin6_port));
  }
  return "a local peer";
}

// The bytes the kernel has received on TCP connection `fd`; -1 when it
// cannot tell (not TCP).
int64_t BytesReceived(int fd) {
  tcp_info info{};
  socklen_t length = sizeof info;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0 ||
      length < offsetof(tcp_info, tcpi_bytes_received) + sizeof info.tcpi_bytes_received) {
    return -1;
  }
  return static_cast<int64_t>(info.tcpi_bytes_received);
}

// The host part of "IP:port", so that one host's reconnections are logged once.
std::string Host(const std::string& peer) { return peer.substr(0, peer.rfind(':')); }

}  // namespace

Result<std::unique_ptr<Gatekeeper>> Gatekeeper::Start(zmq::context_t& context, GateRules rules,
                                                      const std::string& monitor_address) {
  try {
    zmq::socket_t zap(context, zmq::socket_type::rep);
    zap.set(zmq::sockopt::linger, 0);
    zap.bind(kZapAddress);
    zmq::socket_t monitor(context, zmq::socket_type::pair);
    monitor.set(zmq::sockopt::linger, 0);
    monitor.connect(monitor_address);
    std::unique_ptr<Gatekeeper> keeper(
        new Gatekeeper(std::move(rules), std::move(zap), std::move(monitor)));
    keeper->thread_ = std::thread([raw = keeper.get()] { raw->Loop(); });
    return keeper;
  } catch (const zmq::error_t& e) {
    return Status::Unavailable(std::string("cannot start the ZAP handler: ") + e.what());
  }
}

Gatekeeper::Gatekeeper(GateRules rules, zmq::socket_t zap, zmq::socket_t monitor)
    : rules_(std::move(rules)),
      zap_(std::move(zap)),
      monitor_(std::move(monitor)),
      max_connections_(rules_.max_connections),
      max_unread_(rules_.max_unread_bytes) {}

Gatekeeper::~Gatekeeper() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void Gatekeeper::Loop() {
  std::vector<zmq::message_t> request;
  while (!stop_.load()) {
    zmq_pollitem_t items[2] = {{zap_.handle(), 0, ZMQ_POLLIN, 0},
                               {monitor_.handle(), 0, ZMQ_POLLIN, 0}};
    if (zmq_poll(items, 2, kPollMs) < 0) {
      if (zmq_errno() == EINTR) continue;
      if (zmq_errno() == ETERM) return;
      spdlog::error("ZAP handler: poll failed: {}", zmq_strerror(zmq_errno()));
      return;
    }
    // Connections counted first: a request is judged with its own connection open.
    if ((items[1].revents & ZMQ_POLLIN) != 0) DrainMonitor();
    if (max_unread_.load() > 0 && Clock::now() - last_check_ >= kCheckEvery) CheckUnread();
    if ((items[0].revents & ZMQ_POLLIN) == 0) continue;
    try {
      request.clear();
      while (true) {
        zmq::message_t frame;
        if (!zap_.recv(frame, zmq::recv_flags::dontwait)) break;
        const bool more = frame.more();
        request.push_back(std::move(frame));
        if (!more) break;
      }
      // The request's own connection numbered first (its ACCEPTED event
      // was queued before the request, which comes after a handshake).
      DrainMonitor();
      if (!request.empty()) Answer(request);
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) return;
      spdlog::error("ZAP handler: {}", e.what());
    }
  }
}

void Gatekeeper::DrainMonitor() {
  try {
    while (true) {
      zmq::message_t event;
      if (!monitor_.recv(event, zmq::recv_flags::dontwait)) return;
      const bool more = event.more();
      if (more) {
        zmq::message_t address;  // the endpoint, not needed here
        (void)monitor_.recv(address, zmq::recv_flags::dontwait);
      }
      if (event.size() < 6) continue;
      uint16_t id = 0;
      uint32_t value = 0;
      std::memcpy(&id, event.data(), sizeof id);
      std::memcpy(&value, static_cast<const char*>(event.data()) + 2, sizeof value);
      const int fd = static_cast<int>(value);
      std::lock_guard<std::mutex> lock(mutex_);
      if (id == ZMQ_EVENT_ACCEPTED) {
        open_[fd] =
            Connection{.opened = Clock::now(), .peer = PeerName(fd), .serial = ++last_serial_};
      }
      if (auto it = open_.find(fd); id == ZMQ_EVENT_DISCONNECTED && it != open_.end()) {
        NoteClosed(it->second);
        open_.erase(it);
      }
    }
  } catch (const zmq::error_t&) {
    // The monitored socket is closing: nothing left to count.
  }
}

void Gatekeeper::Answer(std::vector<zmq::message_t>& request) {
  // RFC 27: version, request id, domain, address, identity, mechanism, credentials...
  std::string status = "500";
  std::string text = "malformed ZAP request";
  std::string request_id;
  // A worker's connection carries its key as the ZAP user id (Endpoint::
  // LastSenderKey); a shard's, kShardUserId.
  std::string user_id = "worker";
  if (request.size() >= 6 && Text(request[0]) == "1.0") {
    request_id = Text(request[1]);
    const std::string address = Text(request[3]);
    const std::string mechanism = Text(request[5]);
    status = "200";
    text = "OK";
    std::unique_lock<std::mutex> lock(mutex_);
    const int64_t open = static_cast<int64_t>(open_.size());
    const bool full =
        max_connections_.load() > 0 && open > max_connections_.load() && !MakeRoom(address);
    lock.unlock();
    if (full) {
      // 400, not 300 ("try again later"): with 300 libzmq keeps the
      // connection waiting until the handshake times out instead of
      // closing it, and the client never learns why.
      status = "400";
      text = "too many connections";
      LogRefusal("address " + address, "too many connections (" + std::to_string(open) +
                                           " open, at most " +
                                           std::to_string(max_connections_.load()) + ")");
    } else if (rules_.curve) {
      std::string key;
      if (mechanism == "CURVE" && request.size() >= 7 && request[6].size() == 32) {
        char z85[kZ85KeyLength + 1] = {};
        zmq_z85_encode(z85, static_cast<const uint8_t*>(request[6].data()), 32);
        key = z85;
      }
      if (!key.empty() && key == rules_.shard_key) {
        user_id = kShardUserId;
      } else if (!key.empty() && rules_.allowed_keys.count(key) != 0) {
        user_id = key;
      } else if (key.empty() || rules_.allowed_keys.count(key) == 0) {
        status = "400";
        text = "key not allowed";
        LogRefusal(
            key.empty() ? "address " + address : "key " + key,
            key.empty() ? "no CURVE key" : "key not in --curve-allow (from " + address + ")");
      }
    }
  }
  if (status != "200") ++refused_;
  const std::string parts[] = {"1.0", request_id, status, text, status == "200" ? user_id : "", ""};
  try {
    for (size_t i = 0; i < std::size(parts); ++i) {
      zmq::message_t frame(parts[i].data(), parts[i].size());
      zap_.send(frame, i + 1 < std::size(parts) ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
  } catch (const zmq::error_t& e) {
    spdlog::error("ZAP handler: cannot answer: {}", e.what());
  }
}

void Gatekeeper::LogRefusal(const std::string& peer, const std::string& why) {
  if (logged_.count(peer) != 0) return;
  if (logged_.size() < kLoggedPeers) {
    logged_.insert(peer);
    spdlog::warn("refused a connection from {}: {}", peer, why);
    if (logged_.size() == kLoggedPeers) {
      spdlog::warn("refusals of further peers are logged at debug level");
    }
  } else {
    spdlog::debug("refused a connection from {}: {}", peer, why);
  }
}

void Gatekeeper::Delivered(int fd, int64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = open_.find(fd);
  if (it != open_.end()) it->second.delivered += bytes;
}

void Gatekeeper::Admit(int fd) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = open_.find(fd);
  if (it != open_.end()) it->second.admitted = true;
}

int64_t Gatekeeper::SerialOf(int fd) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = open_.find(fd);
  return it == open_.end() ? 0 : it->second.serial;
}

bool Gatekeeper::PeerClosed(int64_t serial) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [fd, connection] : open_) {
    if (connection.serial != serial) continue;
    tcp_info info{};
    socklen_t length = sizeof info;
    if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) return false;
    // The kernel's TCP states (include/net/tcp_states.h): TIME_WAIT 6,
    // CLOSE 7, CLOSE_WAIT 8, LAST_ACK 9, CLOSING 11; <linux/tcp.h> does not
    // name them.
    const int state = info.tcpi_state;
    return state == 6 || state == 7 || state == 8 || state == 9 || state == 11;
  }
  return serial != 0 && serial <= last_serial_;  // numbered, and no longer open
}

std::vector<int64_t> Gatekeeper::TakeClosed() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int64_t> closed;
  closed.swap(closed_);
  return closed;
}

void Gatekeeper::NoteClosed(const Connection& connection) {
  if (!connection.admitted) return;
  if (closed_.size() >= kClosedKept) closed_.erase(closed_.begin());
  closed_.push_back(connection.serial);
}

void Gatekeeper::CheckUnread() {
  last_check_ = Clock::now();
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::pair<int, int64_t>> over;
  for (auto& [fd, connection] : open_) {
    const int64_t received = BytesReceived(fd);
    if (received < 0) continue;
    connection.received = received;
    // The frames' overhead is overestimated: the excess must not pile up
    // into credit for a message that never ends.
    connection.delivered = std::min(connection.delivered, received);
    const int64_t unread = received - connection.delivered;
    if (unread > max_unread_.load()) over.emplace_back(fd, unread);
  }
  for (const auto& [fd, unread] : over) {
    Drop(fd, open_.at(fd),
         fmt::format("it sent {} bytes that make no whole message yet (at most {}): a message "
                     "over the limit, or one that never ends",
                     unread, max_unread_.load()));
  }
}

bool Gatekeeper::MakeRoom(const std::string& address) {
  if (EvictOldestPending()) return true;
  // ZAP names an IPv6 peer without the brackets that PeerName puts around it.
  return EvictFromCrowdedHost(address.find(':') == std::string::npos ? address
                                                                     : "[" + address + "]");
}

bool Gatekeeper::EvictFromCrowdedHost(const std::string& host) {
  std::map<std::string, int64_t> pending;  // connections not joined, by host
  int64_t all_pending = 0;
  for (const auto& [fd, connection] : open_) {
    if (connection.admitted) continue;
    ++pending[Host(connection.peer)];
    ++all_pending;
  }
  auto crowded = pending.end();
  for (auto it = pending.begin(); it != pending.end(); ++it) {
    if (crowded == pending.end() || it->second > crowded->second) crowded = it;
  }
  const int64_t own = pending.count(host) != 0 ? pending.at(host) : 0;
  // The newcomer is among open_ already (the monitor is read first).
  if (crowded == pending.end() || crowded->first == host || crowded->second <= own) return false;
  auto oldest = open_.end();
  for (auto it = open_.begin(); it != open_.end(); ++it) {
    if (it->second.admitted || Host(it->second.peer) != crowded->first) continue;
    if (oldest == open_.end() || it->second.opened < oldest->second.opened) oldest = it;
  }
  const std::string key = "crowded " + crowded->first;
  if (logged_.count(key) == 0 && logged_.size() < kLoggedPeers) {
    logged_.insert(key);
    spdlog::warn(
        "{} holds {} of the {} connections that have not joined, all younger than {} ms "
        "(a connection flood?): its connections give way to those of other hosts",
        crowded->first, crowded->second, all_pending, kJoinGrace.count());
  }
  const auto idle =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - oldest->second.opened);
  Drop(oldest->first, oldest->second,
       fmt::format("it has not joined in {} ms, and its host holds more connections that have "
                   "not joined than {}, which needs a place",
                   idle.count(), host));
  return true;
}

bool Gatekeeper::EvictOldestPending() {
  const Clock::time_point now = Clock::now();
  auto oldest = open_.end();
  for (auto it = open_.begin(); it != open_.end(); ++it) {
    if (it->second.admitted || now - it->second.opened < kJoinGrace) continue;
    if (oldest == open_.end() || it->second.opened < oldest->second.opened) oldest = it;
  }
  if (oldest == open_.end()) return false;
  const auto idle =
      std::chrono::duration_cast<std::chrono::milliseconds>(now - oldest->second.opened);
  Drop(oldest->first, oldest->second,
       fmt::format("it has not joined in {} ms, and a new connection needs its place",
                   idle.count()));
  return true;
}

void Gatekeeper::Drop(int fd, const Connection& connection, const std::string& why) {
  const std::string peer = connection.peer;
  NoteClosed(connection);
  open_.erase(fd);
  // The descriptor may have closed (and been reused) since it was counted.
  if (peer.empty() || PeerName(fd) != peer) return;
  (void)shutdown(fd, SHUT_RDWR);
  const std::string key = "closed " + Host(peer);
  if (logged_.count(key) == 0 && logged_.size() < kLoggedPeers) {
    logged_.insert(key);
    spdlog::warn("closed the connection from {}: {}", peer, why);
  } else {
    spdlog::debug("closed the connection from {}: {}", peer, why);
  }
}

}  // namespace dmlps::net
