#include "server/checkpoint_writer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace dmlps::server {

CheckpointWriter::CheckpointWriter(std::string path, bool keep_failed)
    : path_(std::move(path)), keep_failed_(keep_failed) {
  thread_ = std::thread([this] { Loop(); });
}

CheckpointWriter::~CheckpointWriter() { Finish(); }

void CheckpointWriter::Submit(Checkpoint checkpoint) {
  MutexLock lock(&mutex_);
  pending_ = std::move(checkpoint);
  wake_.Signal();
}

void CheckpointWriter::Finish() {
  {
    MutexLock lock(&mutex_);
    if (!pending_.has_value()) pending_ = std::move(failed_);
    failed_.reset();
    done_ = true;
    wake_.Signal();
  }
  if (thread_.joinable()) thread_.join();
}

bool CheckpointWriter::AwaitWritten() {
  MutexLock lock(&mutex_);
  while (pending_.has_value() || writing_) idle_.Wait(&mutex_);
  return !failed_.has_value();
}

bool CheckpointWriter::Retry() {
  MutexLock lock(&mutex_);
  if (!failed_.has_value() || done_) return false;
  if (!pending_.has_value()) pending_ = std::move(failed_);
  failed_.reset();
  wake_.Signal();
  return true;
}

int64_t CheckpointWriter::written() const {
  MutexLock lock(&mutex_);
  return written_;
}

double CheckpointWriter::write_ms() const {
  MutexLock lock(&mutex_);
  return write_ms_;
}

std::optional<Checkpoint> CheckpointWriter::Next() {
  MutexLock lock(&mutex_);
  while (!pending_.has_value() && !done_) wake_.Wait(&mutex_);
  std::optional<Checkpoint> next = std::move(pending_);
  pending_.reset();
  writing_ = next.has_value();
  return next;
}

void CheckpointWriter::Written(Checkpoint checkpoint, const Status& written, double ms) {
  MutexLock lock(&mutex_);
  writing_ = false;
  idle_.SignalAll();
  if (written.ok()) {
    ++written_;
    write_ms_ += ms;
    spdlog::info("checkpoint of iteration {} written to {} ({:.1f} ms)", checkpoint.iteration,
                 path_, ms);
  } else {
    spdlog::error("checkpoint of iteration {} not written, the previous one is kept: {}",
                  checkpoint.iteration, written.message());
    // A newer one pending replaces it, as it would have before the write.
    if (keep_failed_ && !done_ && !pending_.has_value()) failed_ = std::move(checkpoint);
  }
}

void CheckpointWriter::Loop() {
  using Clock = std::chrono::steady_clock;
  while (std::optional<Checkpoint> checkpoint = Next()) {
    const Clock::time_point start = Clock::now();
    Status written = WriteCheckpointFile(path_, *checkpoint);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    Written(std::move(*checkpoint), written, ms);
  }
  MutexLock lock(&mutex_);
  stopped_ = true;
  idle_.SignalAll();
}

bool CheckpointSchedule::Due(int64_t iteration, Clock::time_point now) const {
  if (iteration == last_iteration_) return false;
  const bool by_count = every_iterations_ > 0 &&
                        iteration >= std::max<int64_t>(last_iteration_, 0) + every_iterations_;
  const bool by_time =
      every_seconds_ > 0 && std::chrono::duration<double>(now - last_at_).count() >= every_seconds_;
  return by_count || by_time;
}

void CheckpointSchedule::Taken(int64_t iteration, Clock::time_point now, double path_ms) {
  last_iteration_ = iteration;
  last_at_ = now;
  path_ms_ += path_ms;
}

void CheckpointSchedule::LogCosts(int64_t written, double write_ms) const {
  if (written <= 0) return;
  spdlog::info(
      "{} checkpoints: {:.2f} ms each on the training path, {:.1f} ms each writing "
      "(off it)",
      written, path_ms_ / static_cast<double>(written), write_ms / static_cast<double>(written));
}

}  // namespace dmlps::server
