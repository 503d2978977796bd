#include "server/shard_checkpoint.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>

#include "dmlps/base/file.h"

namespace dmlps::server {

namespace {

Status CheckIndex(const Checkpoint& checkpoint, const std::string& source,
                  const ServerConfig& config) {
  if (checkpoint.shard_index == config.shard_index &&
      checkpoint.shard_count == config.shard_count) {
    return Status::Ok();
  }
  return Status::DataLoss(
      source + ": the checkpoint of server shard " + std::to_string(checkpoint.shard_index) + "/" +
      std::to_string(checkpoint.shard_count) + ", this is shard " +
      std::to_string(config.shard_index) + "/" + std::to_string(config.shard_count));
}

}  // namespace

std::string PreviousCheckpointPath(const std::string& path) { return path + ".prev"; }

Result<std::unique_ptr<ShardCheckpoints>> ShardCheckpoints::Open(const ServerConfig& config) {
  std::unique_ptr<ShardCheckpoints> checkpoints(new ShardCheckpoints(config));
  if (config.resume.empty()) return checkpoints;
  DMLPS_ASSIGN_OR_RETURN(Checkpoint last, ReadCheckpointFile(config.resume));
  DMLPS_RETURN_IF_ERROR(CheckIndex(last, config.resume, config));
  checkpoints->resumable_.push_back(std::move(last));
  // The one before is wanted only when shard 0's file is older than the last.
  const std::string previous = PreviousCheckpointPath(config.resume);
  if (Result<Checkpoint> before = ReadCheckpointFile(previous); before.ok()) {
    if (CheckIndex(*before, previous, config).ok()) {
      checkpoints->resumable_.push_back(std::move(*before));
    }
  } else if (before.status().code() != StatusCode::kNotFound) {
    spdlog::warn("{}", before.status().message());
  }
  return checkpoints;
}

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
  // An external model's layout: where its module state begins, which the
  // optimizer's state does not cover.
  stamp_.layout = welcome.layout;
  if (resumable_.empty()) {
    if (welcome.resume_version < 0) return Status::Ok();
    return Status::Config("shard 0 resumed model version " +
                          std::to_string(welcome.resume_version) +
                          ": this shard needs --resume of its checkpoint of that version");
  }
  const std::string& source = config_.resume;
  // Another model, policy or optimizer is another job's file: data, not config.
  for (const Checkpoint& saved : resumable_) {
    if (Status fits =
            CheckResumable(saved, source, {model, stamp_.policy, stamp_.optimizer}, end - begin);
        !fits.ok()) {
      return Status::DataLoss(fits.message());
    }
    DMLPS_RETURN_IF_ERROR(CheckShardOfCheckpoint(
        saved, source, config_.shard_index, config_.shard_count, begin, end, welcome.num_params));
  }
  const auto same = std::find_if(resumable_.begin(), resumable_.end(), [&](const Checkpoint& c) {
    return c.version == welcome.resume_version;
  });
  if (same == resumable_.end()) {
    return Status::DataLoss(
        source + ": the checkpoint of model version " + std::to_string(resumable_[0].version) +
        (welcome.resume_version < 0
             ? ", but shard 0 started afresh (give it --resume of its own checkpoint)"
             : ", shard 0 resumed version " + std::to_string(welcome.resume_version)));
  }
  const Checkpoint& saved = *same;
  const bool before = same != resumable_.begin();
  const std::string taken = before ? PreviousCheckpointPath(source) : source;
  DMLPS_RETURN_IF_ERROR(CheckTrainable(saved, taken, config_.resume_max_value));
  DMLPS_RETURN_IF_ERROR(optimizer->SetState(saved.optimizer_state).WithContext(source));
  optimizer->set_steps(saved.optimizer_steps);
  *slice = *saved.params;
  spdlog::info("shard {}: resuming from {}{}: iteration {}, model version {}", config_.shard_index,
               source, before ? " (the file before it)" : "", saved.iteration, saved.version);
  resumable_.clear();
  if (before && config_.checkpoint == config_.resume) {
    // The last file holds a version shard 0 never wrote, and never will:
    // the next checkpoint would keep it as the file before, beside a newer
    // one, and neither would be shard 0's until shard 0 wrote its own.
    if (Status renamed = RenameDurably(taken, source); !renamed.ok()) {
      return Status::IOError(renamed.message() + " (the version resumed must be " + source +
                             "'s before this shard checkpoints)");
    }
  }
  return Status::Ok();
}

void ShardCheckpoints::Take(const proto::Order& order, ModelStore& store,
                            const optim::Optimizer& optimizer, std::function<void()> written) {
  if (config_.checkpoint.empty()) {
    spdlog::debug("shard {}: no --checkpoint; checkpoint of version {} not taken",
                  config_.shard_index, order.clock);
    written();
    return;
  }
  auto checkpoint = std::make_shared<Checkpoint>(stamp_);
  checkpoint->version = order.clock;
  checkpoint->iteration = static_cast<int64_t>(order.value);
  checkpoint->optimizer_state = optimizer.State();
  checkpoint->optimizer_steps = optimizer.steps();
  // The sink owns what it writes: it runs at once when nothing is queued in
  // the store, else once the operations before it are done.
  store.Snapshot([this, checkpoint,
                  written = std::move(written)](std::shared_ptr<const std::vector<float>> values) {
    checkpoint->params = std::move(values);
    if (Write(*checkpoint)) written();
  });
}

bool ShardCheckpoints::Write(const Checkpoint& checkpoint) const {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  // Written on the shard's own thread, not another: the caller echoes the
  // order to shard 0 as soon as this returns true.
  // The file before becomes FILE.prev by a second link, not a rename, and
  // the new one replaces FILE whole: a shard killed at any point leaves a
  // FILE to resume from.
  const std::string& path = config_.checkpoint;
  const std::string previous = PreviousCheckpointPath(path);
  (void)::unlink(previous.c_str());
  (void)::link(path.c_str(), previous.c_str());
  if (Status written = WriteCheckpointFile(path, checkpoint); !written.ok()) {
    spdlog::error("checkpoint of iteration {} not written: {}", checkpoint.iteration,
                  written.message());
    return false;
  }
  spdlog::info("checkpoint of iteration {} written to {} ({:.1f} ms)", checkpoint.iteration, path,
               std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  return true;
}

}  // namespace dmlps::server
