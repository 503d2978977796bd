// Writes the server's checkpoints on a thread of its own, so that training
// never waits for the disk, and decides when one is due.
#ifndef DMLPS_SERVER_CHECKPOINT_WRITER_H_
#define DMLPS_SERVER_CHECKPOINT_WRITER_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>

#include "dmlps/base/mutex.h"
#include "dmlps/server/checkpoint.h"

namespace dmlps::server {

class CheckpointWriter {
 public:
  // Starts the thread that writes to `path` (WriteCheckpointFile). With
  // `keep_failed`, a checkpoint whose write failed is kept, for Retry.
  explicit CheckpointWriter(std::string path, bool keep_failed = false);
  // Writes what is pending first, as Finish does.
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Hands `checkpoint` over for writing; it replaces one submitted earlier
  // and not yet begun, since only the newest is worth the disk's time.
  // REQUIRES: checkpoint.params set.
  void Submit(Checkpoint checkpoint) EXCLUDES(mutex_);
  // Writes what is pending (or kept, once more) and stops the thread. A
  // failed write is logged and keeps the previous file
  // (WriteCheckpointFile): the run goes on.
  void Finish() EXCLUDES(mutex_);
  // Waits until the checkpoints submitted are written, or their write
  // failed; whether the last is on disk (false: it is kept, for Retry).
  bool AwaitWritten() EXCLUDES(mutex_);
  // Writes again the checkpoint kept after its write failed; false when
  // none is kept.
  bool Retry() EXCLUDES(mutex_);
  // Checkpoints written so far, and the time their writing took in all.
  int64_t written() const EXCLUDES(mutex_);
  double write_ms() const EXCLUDES(mutex_);

 private:
  void Loop();
  // The next checkpoint to write, once there is one; none once finished.
  std::optional<Checkpoint> Next() EXCLUDES(mutex_);
  // Counts (or logs the failure of, and keeps) the write of `checkpoint`,
  // which took `ms`.
  void Written(Checkpoint checkpoint, const Status& written, double ms) EXCLUDES(mutex_);

  const std::string path_;
  const bool keep_failed_;
  mutable Mutex mutex_;
  CondVar wake_;  // for the thread: one pending, or done
  CondVar idle_;  // for AwaitWritten: none pending or being written
  std::optional<Checkpoint> pending_ GUARDED_BY(mutex_);
  bool writing_ GUARDED_BY(mutex_) = false;              // the thread holds one
  std::optional<Checkpoint> failed_ GUARDED_BY(mutex_);  // kept for Retry
  bool done_ GUARDED_BY(mutex_) = false;
  bool stopped_ GUARDED_BY(mutex_) = false;  // the thread has ended
  int64_t written_ GUARDED_BY(mutex_) = 0;
  double write_ms_ GUARDED_BY(mutex_) = 0;  // summed over the files written
  std::thread thread_;
};

// When shard 0 takes a checkpoint (--checkpoint-every), and what taking
// them cost the training thread, for the closing log line.
class CheckpointSchedule {
 public:
  using Clock = std::chrono::steady_clock;

  // Every `every_iterations` iterations and every `every_seconds` seconds
  // (0: not by that measure), counted from `last_iteration` (-1: none yet,
  // or the iteration --resume starts from).
  CheckpointSchedule(int64_t every_iterations, double every_seconds, int64_t last_iteration)
      : every_iterations_(every_iterations),
        every_seconds_(every_seconds),
        last_iteration_(last_iteration) {}

  // The clock for every_seconds starts at `now` (training starts).
  void Start(Clock::time_point now) { last_at_ = now; }
  // Whether one is due at `iteration`, `now`; never twice for one iteration.
  bool Due(int64_t iteration, Clock::time_point now) const;
  // One was taken at `iteration`, `now`; taking it cost the training
  // thread `path_ms`.
  void Taken(int64_t iteration, Clock::time_point now, double path_ms);
  // Logs what the `written` checkpoints cost, on the training path and off
  // it (`write_ms` in all).
  void LogCosts(int64_t written, double write_ms) const;

 private:
  const int64_t every_iterations_;
  const double every_seconds_;
  int64_t last_iteration_;
  Clock::time_point last_at_;
  double path_ms_ = 0;  // time the training thread spent on checkpoints
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_CHECKPOINT_WRITER_H_
