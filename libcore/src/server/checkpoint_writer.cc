#include "server/checkpoint_writer.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <utility>

namespace dmlps::server {

CheckpointWriter::CheckpointWriter(std::string path) : path_(std::move(path)) {
  thread_ = std::thread([this] { Loop(); });
}

CheckpointWriter::~CheckpointWriter() { Finish(); }

void CheckpointWriter::Submit(Checkpoint checkpoint) {
  std::lock_guard lock(mutex_);
  pending_ = std::move(checkpoint);
  wake_.notify_one();
}

void CheckpointWriter::Finish() {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
    wake_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

int64_t CheckpointWriter::written() const {
  std::lock_guard lock(mutex_);
  return written_;
}

double CheckpointWriter::write_ms() const {
  std::lock_guard lock(mutex_);
  return write_ms_;
}

void CheckpointWriter::Loop() {
  using Clock = std::chrono::steady_clock;
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return pending_.has_value() || done_; });
    if (!pending_.has_value()) return;
    Checkpoint checkpoint = std::move(*pending_);
    pending_.reset();
    lock.unlock();
    const Clock::time_point start = Clock::now();
    Status written = WriteCheckpointFile(path_, checkpoint);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    lock.lock();
    if (written.ok()) {
      ++written_;
      write_ms_ += ms;
      spdlog::info("checkpoint of iteration {} written to {} ({:.1f} ms)", checkpoint.iteration,
                   path_, ms);
    } else {
      spdlog::error("checkpoint of iteration {} not written, the previous one is kept: {}",
                    checkpoint.iteration, written.message());
    }
  }
}

}  // namespace dmlps::server
