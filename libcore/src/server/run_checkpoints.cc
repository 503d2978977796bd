#include "server/run_checkpoints.h"

#include <chrono>
#include <utility>

namespace dmlps::server {

RunCheckpoints::RunCheckpoints(const ServerConfig& config, CheckpointJob job,
                               const sync::DriverCore& driver, ModelStore& store,
                               const optim::Optimizer& optimizer, ShardCoordinator& shards,
                               const RunTimer& timer)
    : config_(config),
      job_(std::move(job)),
      driver_(driver),
      store_(store),
      optimizer_(optimizer),
      shards_(shards),
      timer_(timer),
      schedule_(config.checkpoint_every_iterations, config.checkpoint_every_seconds,
                job_.resumed_iteration) {
  // Sharded, a checkpoint whose write failed is written again before the
  // next is ordered (MaybeTake).
  if (!config_.checkpoint.empty()) {
    writer_ = std::make_unique<CheckpointWriter>(config_.checkpoint, shards_.sharded());
  }
}

void RunCheckpoints::MaybeTake() {
  const int64_t iteration = driver_.iteration();
  if (writer_ == nullptr) return;
  // Sharded: one checkpoint at a time, until every shard has written its slice.
  if (unacked_.has_value()) return;
  const Clock::time_point now = Clock::now();
  if (!schedule_.Due(iteration, now)) return;
  // With every update the policy emitted applied on every lane, the model,
  // the optimizer's state and the policy's version agree; what is staged
  // for a round in progress is not kept (workers redo that round). A large
  // model's update runs as its pushes stream in: until then, wait.
  if (store_.ApplyPending()) return;
  const Clock::time_point start = Clock::now();
  // Sharded: the next one only once this shard's file of the last is on
  // disk (waiting here for the rest of its write, when checkpoints come
  // faster than the disk takes them). The other shards keep two files,
  // their last and the one before: ordered sooner, they would move shard
  // 0's version out of both, and a kill of shard 0 then would leave no
  // version all files hold. One whose write failed is written again
  // instead of this one.
  if (shards_.sharded() && !writer_->AwaitWritten()) {
    if (writer_->Retry()) schedule_.Taken(iteration, now, 0);
    return;
  }
  Checkpoint checkpoint = MakeCheckpoint(
      job_.identity, config_.job.workers, driver_.policy().Save(), driver_.samples_applied(),
      job_.seconds_before + std::chrono::duration<double>(now - timer_.own_start()).count(),
      optimizer_.State());
  checkpoint.optimizer_steps = optimizer_.steps();
  checkpoint.layout = job_.layout;
  checkpoint.shard_count = config_.shard_count;
  checkpoint.model_params = job_.model_params;
  // The other shards write their slices of this same version, once the
  // orders before this one are carried out.
  shards_.Order({proto::Order::kCheckpoint, -1, checkpoint.version,
                 static_cast<double>(checkpoint.iteration)});
  // As evaluation does: a copy of the model taken once its updates are in
  // (at once here, nothing being pending); encoding and writing are the
  // writer thread's.
  store_.Snapshot([this, checkpoint = std::move(checkpoint)](
                      std::shared_ptr<const std::vector<float>> values) mutable {
    checkpoint.params = std::move(values);
    if (shards_.sharded()) {
      unacked_ = std::move(checkpoint);  // Commit writes it
    } else {
      writer_->Submit(std::move(checkpoint));
    }
  });
  schedule_.Taken(iteration, now,
                  std::chrono::duration<double, std::milli>(Clock::now() - start).count());
}

void RunCheckpoints::Commit() {
  if (!unacked_.has_value() || !shards_.Written(unacked_->version)) return;
  writer_->Submit(std::move(*unacked_));
  unacked_.reset();
}

int64_t RunCheckpoints::Finish() {
  if (writer_ == nullptr) return 0;
  Commit();
  writer_->Finish();
  schedule_.LogCosts(writer_->written(), writer_->write_ms());
  return writer_->written();
}

}  // namespace dmlps::server
