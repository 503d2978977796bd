#include "server/checkpoint_writer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace dmlps::server {

CheckpointWriter::CheckpointWriter(std::string path) : path_(std::move(path)) {
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
    done_ = true;
    wake_.Signal();
  }
  if (thread_.joinable()) thread_.join();
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
  return next;
}

void CheckpointWriter::Written(const Checkpoint& checkpoint, const Status& written, double ms) {
  MutexLock lock(&mutex_);
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

void CheckpointWriter::Loop() {
  using Clock = std::chrono::steady_clock;
  while (std::optional<Checkpoint> checkpoint = Next()) {
    const Clock::time_point start = Clock::now();
    Status written = WriteCheckpointFile(path_, *checkpoint);
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    Written(*checkpoint, written, ms);
  }
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
