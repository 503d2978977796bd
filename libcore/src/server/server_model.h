// The model shard 0 trains: what it is (a built-in model's spec, or an
// external model's layout), how its parameters are cut into the shards'
// slices, and for the first slice, this shard's, the optimizer that steps
// it and the store that holds it; resumed from --resume and saved to
// --save-model.
#ifndef DMLPS_SERVER_SERVER_MODEL_H_
#define DMLPS_SERVER_SERVER_MODEL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/data/dataset.h"
#include "dmlps/model/model.h"
#include "dmlps/optim/optimizer.h"
#include "dmlps/server/checkpoint.h"
#include "dmlps/server/server.h"
#include "server/coordinator.h"
#include "server/model_store.h"

namespace dmlps::server {

class ServerModel {
 public:
  // The model of `num_params` parameters that `spec` describes (built in)
  // or, without one, `layout` (external), cut into `config`'s shards, with
  // the optimizer of this shard's slice. InvalidArgument when the model
  // has fewer parameters than shards; Config when the optimizer cannot be
  // made for it.
  static Result<std::unique_ptr<ServerModel>> Make(const ServerConfig& config,
                                                   std::optional<model::ModelSpec> spec,
                                                   std::vector<model::TensorSpec> layout,
                                                   int64_t num_params);

  // A built-in model: the config's, for the data of `test_set`; the whole
  // model's initial values go into *params (every shard initializes them
  // alike and keeps its slice).
  static Result<std::unique_ptr<ServerModel>> BuiltIn(const ServerConfig& config,
                                                      const data::Dataset& test_set,
                                                      std::vector<float>* params);

  // --resume: reads the checkpoint of this shard's slice, checks that this
  // run (whose policy is `policy`) may go on from it and loads its
  // optimizer state; returns it, with the slice's values and the policy's.
  Result<Checkpoint> Resume(const std::string& policy);
  // The store holds this shard's slice of `params` (the whole model's
  // initial values, or the slice resumed) from now on, with the config's
  // bounds on an update's norm.
  void Hold(std::vector<float> params);
  // Sharded, with a clip norm: the norm an update is clipped by is the
  // whole model's, every shard's slice's sum, gathered by `shards` (which
  // outlives this). REQUIRES: Hold called.
  void ShareNorm(ShardCoordinator& shards);
  // Writes --save-model: the parameters this shard holds. Unavailable while
  // an update waits for its gradient's chunks.
  Status Save() const;

  // The names this run's checkpoints record, which one resumed must match.
  CheckpointIdentity Identity(const std::string& policy) const {
    return {Name(), policy, optimizer_->Name()};
  }
  std::string Name() const {
    return spec_.has_value() ? spec_->Name() : std::string(kExternalModel);
  }
  // Null for an external model.
  const model::ModelSpec* spec() const { return spec_ ? &*spec_ : nullptr; }
  // An external model's, which every worker must announce; empty for a
  // built-in model.
  const std::vector<model::TensorSpec>& layout() const { return layout_; }
  // Where the slices begin, plus the end (ShardBounds).
  const std::vector<int64_t>& bounds() const { return bounds_; }
  optim::Optimizer& optimizer() { return *optimizer_; }
  // REQUIRES: Hold called.
  ModelStore& store() { return *store_; }

 private:
  ServerModel(const ServerConfig& config, std::optional<model::ModelSpec> spec,
              std::vector<model::TensorSpec> layout, std::vector<int64_t> bounds)
      : config_(config),
        spec_(std::move(spec)),
        layout_(std::move(layout)),
        bounds_(std::move(bounds)) {}

  const ServerConfig& config_;
  const std::optional<model::ModelSpec> spec_;
  const std::vector<model::TensorSpec> layout_;
  const std::vector<int64_t> bounds_;
  int64_t state_begin_ = 0;  // where the module state after the parameters begins
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::optional<ModelStore> store_;
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_SERVER_MODEL_H_
