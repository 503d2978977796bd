// Checkpoints of a server shard beyond 0: its slice of the model and the
// optimizer state of that slice, written when shard 0 orders (Order
// kCheckpoint, at the model version shard 0's own checkpoint holds) and
// read back by --resume, so that every shard of a job goes on from the
// same update.
#ifndef DMLPS_SERVER_SHARD_CHECKPOINT_H_
#define DMLPS_SERVER_SHARD_CHECKPOINT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/optim/optimizer.h"
#include "dmlps/proto/messages.h"
#include "dmlps/server/checkpoint.h"
#include "dmlps/server/server.h"
#include "server/checkpoint_writer.h"
#include "server/model_store.h"

namespace dmlps::server {

class ShardCheckpoints {
 public:
  // Reads config.resume, when set: NotFound, IOError or DataLoss (also when
  // it is the file of another shard index or count), before this shard
  // registers, so that a wrong file is refused at once.
  static Result<std::unique_ptr<ShardCheckpoints>> Open(const ServerConfig& config);
  ~ShardCheckpoints();

  // Shard 0's Welcome came: this shard holds [begin, end) of `model`
  // (ModelSpec::Name()) of `welcome`. With --resume, checks that the file is
  // that slice of that job, at the version shard 0 resumed (DataLoss), and
  // puts its values in `slice` and its state in `optimizer`; without, Config
  // when shard 0 resumed (this shard's fresh slice would not fit its).
  // Starts the writer (--checkpoint).
  Status Adopt(const proto::Welcome& welcome, const std::string& model, int64_t begin, int64_t end,
               std::vector<float>* slice, optim::Optimizer* optimizer);

  // Carries out Order `order` (kCheckpoint): hands the slice as it stands
  // and the optimizer's state to the writer. REQUIRES: !store.ApplyPending(),
  // so that the two agree.
  void Take(const proto::Order& order, ModelStore& store, const optim::Optimizer& optimizer);
  // Writes what is pending; logs the checkpoints written.
  void Finish();

 private:
  explicit ShardCheckpoints(const ServerConfig& config) : config_(config) {}

  const ServerConfig& config_;
  std::optional<Checkpoint> resumed_;         // --resume, until adopted
  std::unique_ptr<CheckpointWriter> writer_;  // null without --checkpoint
  Checkpoint stamp_;                          // what every file of this shard records of the job
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_SHARD_CHECKPOINT_H_
