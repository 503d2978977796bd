#include "server/shard_checkpoint.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

namespace dmlps::server {

Result<std::unique_ptr<ShardCheckpoints>> ShardCheckpoints::Open(const ServerConfig& config) {
  std::unique_ptr<ShardCheckpoints> checkpoints(new ShardCheckpoints(config));
  if (config.resume.empty()) return checkpoints;
  DMLPS_ASSIGN_OR_RETURN(Checkpoint checkpoint, ReadCheckpointFile(config.resume));
  if (checkpoint.shard_index != config.shard_index ||
      checkpoint.shard_count != config.shard_count) {
    return Status::DataLoss(config.resume + ": the checkpoint of server shard " +
                            std::to_string(checkpoint.shard_index) + "/" +
                            std::to_string(checkpoint.shard_count) + ", this is shard " +
                            std::to_string(config.shard_index) + "/" +
                            std::to_string(config.shard_count));
  }
  checkpoints->resumed_ = std::move(checkpoint);
  return checkpoints;
}

ShardCheckpoints::~ShardCheckpoints() { Finish(); }

Status ShardCheckpoints::Adopt(const proto::Welcome& welcome, const std::string& model,
                               int64_t begin, int64_t end, std::vector<float>* slice,
                               optim::Optimizer* optimizer) {
  stamp_.model = model;
  stamp_.policy = welcome.policy;
  stamp_.optimizer = optimizer->Name();
  stamp_.workers = std::max<int64_t>(welcome.num_workers, 1);
  stamp_.shard_index = config_.shard_index;
  stamp_.shard_count = config_.shard_count;
  stamp_.slice_begin = begin;
  stamp_.model_params = welcome.num_params;
  if (resumed_.has_value()) {
    const Checkpoint& saved = *resumed_;
    const std::string& source = config_.resume;
    // Another model, policy or optimizer is another job's file: data, not config.
    if (Status fits =
            CheckResumable(saved, source, {model, stamp_.policy, stamp_.optimizer}, end - begin);
        !fits.ok()) {
      return Status::DataLoss(fits.message());
    }
    DMLPS_RETURN_IF_ERROR(CheckShardOfCheckpoint(
        saved, source, config_.shard_index, config_.shard_count, begin, end, welcome.num_params));
    if (saved.version != welcome.resume_version) {
      return Status::DataLoss(
          source + ": the checkpoint of model version " + std::to_string(saved.version) +
          (welcome.resume_version < 0
               ? ", but shard 0 started afresh (give it --resume of its own checkpoint)"
               : ", shard 0 resumed version " + std::to_string(welcome.resume_version)));
    }
    DMLPS_RETURN_IF_ERROR(optimizer->SetState(saved.optimizer_state).WithContext(source));
    *slice = *saved.params;
    spdlog::info("shard {}: resuming from {}: iteration {}, model version {}", config_.shard_index,
                 source, saved.iteration, saved.version);
    resumed_.reset();
  } else if (welcome.resume_version >= 0) {
    return Status::Config("shard 0 resumed model version " +
                          std::to_string(welcome.resume_version) +
                          ": this shard needs --resume of its checkpoint of that version");
  }
  if (!config_.checkpoint.empty()) writer_ = std::make_unique<CheckpointWriter>(config_.checkpoint);
  return Status::Ok();
}

void ShardCheckpoints::Take(const proto::Order& order, ModelStore& store,
                            const optim::Optimizer& optimizer) {
  if (writer_ == nullptr) {
    spdlog::debug("shard {}: no --checkpoint; checkpoint of version {} not taken",
                  config_.shard_index, order.clock);
    return;
  }
  Checkpoint checkpoint = stamp_;
  checkpoint.version = order.clock;
  checkpoint.iteration = static_cast<int64_t>(order.value);
  checkpoint.optimizer_state = optimizer.State();
  // Nothing is pending: the sink runs at once, with the slice as it stands.
  store.Snapshot([this, checkpoint = std::move(checkpoint)](
                     std::shared_ptr<const std::vector<float>> values) mutable {
    checkpoint.params = std::move(values);
    writer_->Submit(std::move(checkpoint));
  });
}

void ShardCheckpoints::Finish() {
  if (writer_ == nullptr) return;
  writer_->Finish();
  if (const int64_t written = writer_->written(); written > 0) {
    spdlog::info("shard {}: {} checkpoints written, {:.1f} ms each", config_.shard_index, written,
                 writer_->write_ms() / static_cast<double>(written));
  }
  writer_.reset();
}

}  // namespace dmlps::server
