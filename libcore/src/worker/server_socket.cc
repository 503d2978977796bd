#include "worker/server_socket.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "dmlps/trace/trace.h"

namespace dmlps::worker {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

ServerSocket::ServerSocket(milliseconds heartbeat)
    : heartbeat_(heartbeat), owner_(std::this_thread::get_id()) {}

ServerSocket::~ServerSocket() {
  {
    MutexLock lock(&mutex_);
    quit_ = true;
  }
  beat_wake_.SignalAll();
  if (beat_thread_.joinable()) beat_thread_.join();
}

void ServerSocket::SetBusy(int delta) {
  {
    MutexLock lock(&mutex_);
    busy_ += delta;
    if (!beat_thread_.joinable()) beat_thread_ = std::thread([this] { BeatWhileBusy(); });
  }
  beat_wake_.SignalAll();
}

int64_t ServerSocket::busy_heartbeats() {
  MutexLock lock(&mutex_);
  return busy_heartbeats_;
}

void ServerSocket::BeatWhileBusy() {
  MutexLock lock(&mutex_);
  while (!quit_) {
    if (busy_ > 0) {
      if (HeartbeatIfDue()) ++busy_heartbeats_;
      HoldIncoming();
      // The next is due --heartbeat-ms after the last, whichever thread sent
      // it (not sooner than 10 ms from now, should there be no socket yet).
      (void)beat_wake_.WaitUntil(
          &mutex_, std::max(last_heartbeat_ + heartbeat_, Clock::now() + milliseconds(10)));
    } else {
      beat_wake_.Wait(&mutex_);
    }
  }
}

void ServerSocket::Open(net::Endpoint endpoint) {
  MutexLock lock(&mutex_);
  endpoint_.emplace(std::move(endpoint));
}

void ServerSocket::Close() {
  MutexLock lock(&mutex_);
  if (endpoint_.has_value()) endpoint_->DiscardUnsent();
  endpoint_.reset();
  held_.clear();
  held_error_ = Status::Ok();
}

void ServerSocket::DiscardUnsent() {
  MutexLock lock(&mutex_);
  endpoint_->DiscardUnsent();
}

bool ServerSocket::is_open() {
  MutexLock lock(&mutex_);
  return endpoint_.has_value();
}

Status ServerSocket::Send(const proto::Body& body, net::Frames payload) {
  MutexLock lock(&mutex_);
  return endpoint_->SendMessage(nullptr, body, std::move(payload));
}

Status ServerSocket::SendWithPayload(proto::Body header,
                                     std::shared_ptr<const std::vector<float>> values,
                                     int64_t offset, int64_t count, int64_t chunk_bytes,
                                     const proto::Body* then) {
  MutexLock lock(&mutex_);
  return endpoint_->SendWithPayload(nullptr, std::move(header), std::move(values), offset, count,
                                    chunk_bytes, then);
}

Result<bool> ServerSocket::Receive(net::Frames* frames, milliseconds timeout) {
  MutexLock lock(&mutex_);
  if (!held_.empty()) {
    *frames = std::move(held_.front());
    held_.pop_front();
    return true;
  }
  if (!held_error_.ok()) return std::exchange(held_error_, Status::Ok());
  return endpoint_->Receive(frames, timeout);
}

void ServerSocket::HoldIncoming() {
  net::Frames frames;
  while (endpoint_.has_value() && held_error_.ok() && held_.size() < kMaxHeld) {
    Result<bool> got = endpoint_->Receive(&frames, milliseconds(0));
    if (!got.ok()) held_error_ = got.status();
    if (!got.ok() || !*got) return;
    // The server's heartbeats say only that it is alive: dropped.
    // (Its header alone is read: the frames go on whole to Receive.)
    if (frames.size() == 1) {
      Result<proto::Body> header = proto::DecodeHeader(frames[0].data(), frames[0].size());
      if (header.ok() && std::holds_alternative<proto::Heartbeat>(*header)) continue;
    }
    held_.push_back(std::move(frames));
  }
}

void ServerSocket::MaybeHeartbeat() {
  if (std::this_thread::get_id() != owner_) return;
  MutexLock lock(&mutex_);
  HeartbeatIfDue();
}

bool ServerSocket::HeartbeatIfDue() {
  if (!endpoint_.has_value()) return false;
  const Clock::time_point now = Clock::now();
  if (now - last_heartbeat_ < heartbeat_) return false;
  last_heartbeat_ = now;
  const int64_t now_us = trace::NowMicros();
  if (Status sent = endpoint_->SendMessage(nullptr, proto::Heartbeat{now_us}); !sent.ok()) {
    spdlog::debug("heartbeat to the server failed: {}", sent.ToString());
  }
  return true;
}

}  // namespace dmlps::worker
