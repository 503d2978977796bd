// Checkpoints of a server shard beyond 0: its slice of the model and the
// optimizer state of that slice, written when shard 0 orders (Order
// kCheckpoint, at the model version of shard 0's own checkpoint) and read
// back by --resume, so that every shard of a job goes on from the same
// update. Each write keeps the file before it as FILE.prev: shard 0 writes
// its own file only once every shard has written that version, and orders
// the next only once its own is on disk, so one of the two always holds
// the version shard 0's file does.
#ifndef DMLPS_SERVER_SHARD_CHECKPOINT_H_
#define DMLPS_SERVER_SHARD_CHECKPOINT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/optim/optimizer.h"
#include "dmlps/proto/messages.h"
#include "dmlps/server/checkpoint.h"
#include "dmlps/server/server.h"
#include "server/model_store.h"

namespace dmlps::server {

// The file the checkpoint before the last of a shard beyond 0 moves to.
std::string PreviousCheckpointPath(const std::string& path);

class ShardCheckpoints {
 public:
  // Reads config.resume, when set, and the file before it (FILE.prev), when
  // there is one: NotFound, IOError or DataLoss (also when config.resume is
  // the file of another shard index or count), before this shard
  // registers, so that a wrong file is refused at once.
  static Result<std::unique_ptr<ShardCheckpoints>> Open(const ServerConfig& config);

  // Shard 0's Welcome came: this shard holds [begin, end) of `model`
  // (ModelSpec::Name()) of `welcome`. With --resume, takes the file of the
  // version shard 0 resumed, checks that it is that slice of that job
  // (DataLoss; also when a value is beyond --resume-max-value,
  // CheckTrainable), and puts its values in `slice` and its state in
  // `optimizer`; without, Config when shard 0 resumed (a fresh slice would
  // not fit its). Resuming the file before the last, with --checkpoint the
  // --resume file, moves it back over the last (IOError when it cannot),
  // whose version shard 0 never wrote.
  Status Adopt(const proto::Welcome& welcome, const std::string& model, int64_t begin, int64_t end,
               std::vector<float>* slice, optim::Optimizer* optimizer);

  // Carries out Order `order` (kCheckpoint): writes the slice as it stands
  // now and the optimizer's state to --checkpoint, the file before moving to
  // FILE.prev, then calls `written` (not on a failed write, which is logged:
  // shard 0 must not count on it). Without --checkpoint, writes nothing and
  // calls `written` at once. The slice is read when the store's operations
  // queued before it are done (replies still streaming, say), so the write
  // and `written` may come after Take returns, while the store and this
  // object live. REQUIRES: !store.ApplyPending(), so that the two agree.
  void Take(const proto::Order& order, ModelStore& store, const optim::Optimizer& optimizer,
            std::function<void()> written);

 private:
  explicit ShardCheckpoints(const ServerConfig& config) : config_(config) {}

  // Writes `checkpoint` to --checkpoint, the file before kept as FILE.prev;
  // false, logged, when it could not.
  bool Write(const Checkpoint& checkpoint) const;

  const ServerConfig& config_;
  std::vector<Checkpoint> resumable_;  // --resume and the file before it, until adopted
  Checkpoint stamp_;                   // what every file of this shard records of the job
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_SHARD_CHECKPOINT_H_
