// Writes the server's checkpoints on a thread of its own, so that training
// never waits for the disk.
#ifndef DMLPS_SERVER_CHECKPOINT_WRITER_H_
#define DMLPS_SERVER_CHECKPOINT_WRITER_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "dmlps/server/checkpoint.h"

namespace dmlps::server {

class CheckpointWriter {
 public:
  // Starts the thread that writes to `path` (WriteCheckpointFile).
  explicit CheckpointWriter(std::string path);
  // Writes what is pending first, as Finish does.
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Hands `checkpoint` over for writing; it replaces one submitted earlier
  // and not yet begun, since only the newest is worth the disk's time.
  // REQUIRES: checkpoint.params set.
  void Submit(Checkpoint checkpoint);
  // Writes what is pending and stops the thread. A failed write is logged
  // and keeps the previous file (WriteCheckpointFile): the run goes on.
  void Finish();
  // Checkpoints written so far, and the time their writing took in all.
  int64_t written() const;
  double write_ms() const;

 private:
  void Loop();

  const std::string path_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<Checkpoint> pending_;
  bool done_ = false;
  int64_t written_ = 0;
  double write_ms_ = 0;  // summed over the files written
  std::thread thread_;
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_CHECKPOINT_WRITER_H_
