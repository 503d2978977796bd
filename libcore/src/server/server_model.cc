#include "server/server_model.h"

#include <algorithm>
#include <utility>

#include "dmlps/proto/codec.h"
#include "server/shard.h"

namespace dmlps::server {

Result<std::unique_ptr<ServerModel>> ServerModel::Make(const ServerConfig& config,
                                                       std::optional<model::ModelSpec> spec,
                                                       std::vector<model::TensorSpec> layout,
                                                       int64_t num_params) {
  if (config.shard_count > num_params) {
    return Status::InvalidArgument("--shard: " + std::to_string(num_params) +
                                   " parameters cannot be cut into " +
                                   std::to_string(config.shard_count) + " shards");
  }
  // Every shard initializes the whole model the same way and keeps its
  // slice; this one holds the first.
  std::vector<int64_t> bounds = ShardBounds(num_params, config.shard_count);
  const int64_t slice = bounds[1];
  std::unique_ptr<ServerModel> made(
      new ServerModel(config, std::move(spec), std::move(layout), std::move(bounds)));
  // Local-SGD policies step the model with their outer optimizer.
  const std::vector<model::TensorSpec> full_layout =
      made->layout_.empty() && made->spec_.has_value() ? model::LayoutOf(*made->spec_)
                                                       : made->layout_;
  // The optimizer steps the parameters; the module state after them is averaged.
  made->state_begin_ = num_params - model::StateFloats(full_layout);
  Result<std::unique_ptr<optim::Optimizer>> optimizer = optim::MakeOptimizer(
      ServerOptimizerSettings(config), full_layout, 0, std::min(made->state_begin_, slice));
  if (!optimizer.ok()) return Status::Config(optimizer.status().message());
  made->optimizer_ = std::move(*optimizer);
  return made;
}

Result<std::unique_ptr<ServerModel>> ServerModel::BuiltIn(const ServerConfig& config,
                                                          const data::Dataset& test_set,
                                                          std::vector<float>* params) {
  DMLPS_ASSIGN_OR_RETURN(model::ModelSpec spec,
                         model::ParseModelSpec(config.job.model, test_set.dim,
                                               std::max<int64_t>(test_set.classes, 2)));
  model::Model model(spec);
  params->assign(static_cast<size_t>(model.num_params()), 0.f);
  model.Initialize(config.job.seed, *params);
  return Make(config, spec, {}, model.num_params());
}

Result<Checkpoint> ServerModel::Resume(const std::string& policy) {
  DMLPS_ASSIGN_OR_RETURN(Checkpoint checkpoint, ReadCheckpointFile(config_.resume));
  const std::string& source = config_.resume;
  DMLPS_RETURN_IF_ERROR(CheckResumable(checkpoint, source, Identity(policy), bounds_[1]));
  if (const std::string diff = model::FirstLayoutDifference(layout_, checkpoint.layout);
      !diff.empty()) {
    return Status::Config(source + ": this run's layout differs from the checkpoint's: " + diff);
  }
  // Sharded, its file holds shard 0's slice; a file of one server, the whole model.
  DMLPS_RETURN_IF_ERROR(CheckShardOfCheckpoint(checkpoint, source, 0, config_.shard_count, 0,
                                               bounds_[1], bounds_.back()));
  DMLPS_RETURN_IF_ERROR(CheckTrainable(checkpoint, source, config_.resume_max_value));
  DMLPS_RETURN_IF_ERROR(optimizer_->SetState(checkpoint.optimizer_state).WithContext(source));
  optimizer_->set_steps(checkpoint.optimizer_steps);
  return checkpoint;
}

void ServerModel::Hold(std::vector<float> params) {
  params.resize(static_cast<size_t>(bounds_[1]));
  const int64_t lane_floats =
      proto::ChunkBytesFor(static_cast<int64_t>(params.size() * sizeof(float))) /
      static_cast<int64_t>(sizeof(float));
  store_.emplace(std::move(params), lane_floats, config_.threads);
  store_->set_state_begin(state_begin_);
  store_->set_max_norm(config_.max_update_norm);
  store_->set_clip_norm(ServerOptimizerSettings(config_).clip_norm);
}

void ServerModel::ShareNorm(ShardCoordinator& shards) {
  if (!shards.sharded() || ServerOptimizerSettings(config_).clip_norm <= 0) return;
  store_->set_shared_norm(
      [&shards](int64_t step, double squares) { shards.AddOwnNorm(step, squares); });
  shards.set_norm_sink(
      [this](int64_t step, double squares) { store_->TakeGlobalSquares(step, squares); });
}

Status ServerModel::Save() const {
  if (store_->ApplyPending()) {
    return Status::Unavailable(
        "--save-model: an update is still waiting for its gradient's "
        "chunks; the model was not saved");
  }
  const std::vector<float> params = store_->Params();
  return WriteRawModel(config_.save_model, params);
}

}  // namespace dmlps::server
