// Shard 0's socket of a worker's link (worker/link.h), shared by the thread
// that uses the link and a heartbeat thread of its own: while the worker is
// busy computing (ServerLink::BusyScope), that thread sends the server a
// Heartbeat every --heartbeat-ms, so that a step of any length does not look
// like a dead worker, and takes the server's messages off the socket,
// dropping its heartbeats and holding the rest for Receive.
#ifndef DMLPS_WORKER_SERVER_SOCKET_H_
#define DMLPS_WORKER_SERVER_SOCKET_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "dmlps/base/mutex.h"
#include "dmlps/base/status.h"
#include "dmlps/net/endpoint.h"
#include "dmlps/proto/codec.h"

namespace dmlps::worker {

class ServerSocket {
 public:
  // Heartbeats every `heartbeat`. The thread that constructs it is the one
  // whose waits send heartbeats too (MaybeHeartbeat).
  explicit ServerSocket(std::chrono::milliseconds heartbeat);
  ServerSocket(const ServerSocket&) = delete;
  ServerSocket& operator=(const ServerSocket&) = delete;
  // Stops the heartbeat thread, then closes the socket.
  ~ServerSocket();

  // Counts a computation in (+1) or out (-1): the heartbeat thread, started
  // by the first call, heartbeats while any is in. Any thread may call it.
  void SetBusy(int delta) EXCLUDES(mutex_);
  // Heartbeats the heartbeat thread has sent so far (for tests).
  int64_t busy_heartbeats() EXCLUDES(mutex_);

  // Uses `endpoint` from now on. REQUIRES: !is_open().
  void Open(net::Endpoint endpoint) EXCLUDES(mutex_);
  // Closes the socket at once, dropping what it has not sent (to a server
  // that went away) and the messages held.
  void Close() EXCLUDES(mutex_);
  // Drops what the socket has not sent when it closes: nobody will read it.
  void DiscardUnsent() EXCLUDES(mutex_);
  bool is_open() EXCLUDES(mutex_);

  // As net::Endpoint's, to the server. REQUIRES: is_open().
  Status Send(const proto::Body& body, net::Frames payload = {}) EXCLUDES(mutex_);
  Status SendWithPayload(proto::Body header, std::shared_ptr<const std::vector<float>> values,
                         int64_t offset, int64_t count, int64_t chunk_bytes,
                         const proto::Body* then = nullptr) EXCLUDES(mutex_);
  // The oldest message held (or the error met taking it), else what arrives
  // within `timeout`, holding the socket for at most that long; false when
  // nothing came. REQUIRES: is_open().
  Result<bool> Receive(net::Frames* frames, std::chrono::milliseconds timeout) EXCLUDES(mutex_);
  // Sends a heartbeat when one is due; only from the thread that constructed
  // this (on any other, nothing).
  void MaybeHeartbeat() EXCLUDES(mutex_);

 private:
  // Sends a heartbeat when `heartbeat_` passed since the last; true when it
  // tried.
  bool HeartbeatIfDue() REQUIRES(mutex_);
  // Takes what the server sent off the socket, so that its heartbeats
  // cannot fill the queues during a long computation and hold up its
  // replies: heartbeats are dropped, the rest kept in held_ for Receive.
  void HoldIncoming() REQUIRES(mutex_);
  // The heartbeat thread: heartbeats while busy_ > 0, until quit_.
  void BeatWhileBusy() EXCLUDES(mutex_);

  const std::chrono::milliseconds heartbeat_;
  const std::thread::id owner_;  // the thread whose waits heartbeat (MaybeHeartbeat)
  // Held for every use of endpoint_, which the heartbeat thread shares:
  // ZeroMQ lets a socket change threads across a full memory barrier, which
  // the mutex gives. Never held across more than one wait of Receive's.
  Mutex mutex_;
  CondVar beat_wake_;  // busy_ rose, or quit_
  std::optional<net::Endpoint> endpoint_ GUARDED_BY(mutex_);
  std::chrono::steady_clock::time_point last_heartbeat_ GUARDED_BY(mutex_);
  int busy_ GUARDED_BY(mutex_) = 0;
  bool quit_ GUARDED_BY(mutex_) = false;
  int64_t busy_heartbeats_ GUARDED_BY(mutex_) = 0;
  // Messages that HoldIncoming took, oldest first, and the error it met;
  // Receive returns them before anything else.
  static constexpr size_t kMaxHeld = 1024;
  std::deque<net::Frames> held_ GUARDED_BY(mutex_);
  Status held_error_ GUARDED_BY(mutex_);
  std::thread beat_thread_;  // started by the first SetBusy
};

}  // namespace dmlps::worker

#endif  // DMLPS_WORKER_SERVER_SOCKET_H_
