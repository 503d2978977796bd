// How the policy's stages and applies reach shard 0's model store and, as
// orders, the other shards: each stage summed into the accumulator as its
// gradient streams in, or (--deterministic) held until the apply and summed
// in rank order, so that the same pushes give the same sum in any order.
// The policy driver's update sink.
#ifndef DMLPS_SERVER_UPDATES_H_
#define DMLPS_SERVER_UPDATES_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "dmlps/optim/optimizer.h"
#include "dmlps/proto/codec.h"
#include "dmlps/sync/driver.h"
#include "dmlps/trace/trace.h"
#include "server/aggregate.h"
#include "server/centered_clip.h"
#include "server/coordinator.h"
#include "server/intake.h"
#include "server/model_store.h"

namespace dmlps::server {

class ModelUpdates : public sync::UpdateSink<Gradient> {
 public:
  // Updates `store` with `optimizer`, ordering the same of the other shards
  // through `shards`; `tracer` (null: none) gets a span per apply. All
  // outlive this. A robust `aggregation` combines each update's pushes by
  // its rule (ModelStore::Combine; one shard only), holding them until the
  // apply as --deterministic does; centred clipping keeps each worker's
  // momentum and the last centre here.
  ModelUpdates(ModelStore& store, optim::Optimizer& optimizer, ShardCoordinator& shards,
               bool deterministic, trace::TraceWriter* tracer, const Aggregation& aggregation = {})
      : store_(store),
        optimizer_(optimizer),
        shards_(shards),
        deterministic_(deterministic || aggregation.robust()),
        tracer_(tracer),
        aggregation_(aggregation) {
    if (aggregation.rule == Aggregation::Rule::kCenteredClip) {
      clipper_ = std::make_unique<CenteredClip>(aggregation);
    }
  }

  // Adds the push to the next update with `weight`. A null payload
  // (refused) adds nothing.
  void Stage(const sync::HandledPush<Gradient>& push, double weight) override;
  // Applies what is staged, times `scale`, through the optimizer or (not
  // `with_optimizer`) as a plain delta; the model becomes `version`.
  // An update that would make the model non-finite is refused whole
  // (ModelStore::Apply): counted, logged, and traced as "update refused".
  void Apply(double scale, bool with_optimizer, int64_t version) override;
  // Updates refused so far.
  int64_t refused() const { return refused_; }

 private:
  // --deterministic: a stage since the last apply, summed at the next.
  struct HeldStage {
    int64_t worker = 0;
    int64_t clock = 0;  // the worker's own
    double weight = 0;
    Gradient gradient;
  };

  ModelStore& store_;
  optim::Optimizer& optimizer_;
  ShardCoordinator& shards_;
  const bool deterministic_;
  trace::TraceWriter* const tracer_;
  const Aggregation aggregation_;
  // Centred clipping's momenta and centre, kept from round to round (not
  // checkpointed: a resumed run starts them again). Null under other rules.
  std::unique_ptr<CenteredClip> clipper_;
  std::vector<HeldStage> held_;
  int64_t refused_ = 0;
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_UPDATES_H_
