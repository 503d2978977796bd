// Shard 0's checkpoints (--checkpoint, --checkpoint-every): when one is
// due, the model, the optimizer's state and the policy's taken together
// once every update the policy emitted is applied, and written off the
// training thread. Sharded, the other shards are ordered to write their
// slices of the same version, and shard 0's file only ever holds a version
// every shard has in its own file, so that the job can always go back to
// it (shard_recovery.h).
#ifndef DMLPS_SERVER_RUN_CHECKPOINTS_H_
#define DMLPS_SERVER_RUN_CHECKPOINTS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "dmlps/model/model.h"
#include "dmlps/optim/optimizer.h"
#include "dmlps/server/checkpoint.h"
#include "dmlps/server/server.h"
#include "dmlps/sync/driver.h"
#include "server/checkpoint_writer.h"
#include "server/coordinator.h"
#include "server/model_store.h"
#include "server/run_clock.h"

namespace dmlps::server {

// What every checkpoint of a run records besides its state.
struct CheckpointJob {
  CheckpointIdentity identity;            // which one resumed must match
  std::vector<model::TensorSpec> layout;  // an external model's; empty: built in
  int64_t model_params = 0;               // the whole model's, every shard's slice
  double seconds_before = 0;              // training time before --resume
  int64_t resumed_iteration = -1;         // --resume's; -1: none
};

class RunCheckpoints {
 public:
  // Checkpoints of `store`, `optimizer` and `driver`'s policy, timed by
  // `timer`, ordered of the other shards through `shards`; all outlive this.
  // Without --checkpoint none is taken.
  RunCheckpoints(const ServerConfig& config, CheckpointJob job, const sync::DriverCore& driver,
                 ModelStore& store, const optim::Optimizer& optimizer, ShardCoordinator& shards,
                 const RunTimer& timer);

  // Training starts: the clock of --checkpoint-every-seconds with it.
  void Start() { schedule_.Start(Clock::now()); }
  // Takes a checkpoint when one is due and every update queued has been
  // applied.
  void MaybeTake();
  // Sharded: hands shard 0's checkpoint to the writer once every other
  // shard wrote its version.
  void Commit();
  // At the end: writes the checkpoint pending; returns how many were
  // written in all (0 without --checkpoint).
  int64_t Finish();

 private:
  const ServerConfig& config_;
  const CheckpointJob job_;
  const sync::DriverCore& driver_;
  ModelStore& store_;
  const optim::Optimizer& optimizer_;
  ShardCoordinator& shards_;
  const RunTimer& timer_;
  std::unique_ptr<CheckpointWriter> writer_;  // null without --checkpoint
  CheckpointSchedule schedule_;
  // Sharded: shard 0's checkpoint whose version some other shard has not
  // written yet. Shard 0's file only ever holds a version every shard has
  // in its own file (its last or the one before).
  std::optional<Checkpoint> unacked_;
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_RUN_CHECKPOINTS_H_
