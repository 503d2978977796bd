// Shard 0's evaluations of the model: snapshots taken as the policy driver
// asks (sharded, completed by the other shards' slices), evaluated here or
// by an evaluator process, and their results recorded as they come (the
// TSV, the log, the trace, the report and the target), then shown to the
// policy.
#ifndef DMLPS_SERVER_RUN_EVALUATIONS_H_
#define DMLPS_SERVER_RUN_EVALUATIONS_H_

#include <cstdint>
#include <memory>
#include <ostream>

#include "dmlps/base/status.h"
#include "dmlps/server/server.h"
#include "dmlps/sync/driver.h"
#include "dmlps/trace/trace.h"
#include "server/coordinator.h"
#include "server/evaluation_log.h"
#include "server/evaluator.h"
#include "server/model_store.h"
#include "server/run_clock.h"

namespace dmlps::server {

class RunEvaluations {
 public:
  // Evaluates snapshots of `store` (sharded: with the other shards' slices,
  // which `shards` gathers) with `evaluator`, stamped with `driver`'s
  // iteration and samples and `timer`'s seconds; records the results in
  // `tsv`, `tracer` (null: none) and `report`. All outlive this.
  RunEvaluations(const ServerConfig& config, std::unique_ptr<SnapshotEvaluator> evaluator,
                 std::ostream& tsv, trace::TraceWriter* tracer, const RunTimer& timer,
                 sync::DriverCore& driver, ModelStore& store, ShardCoordinator& shards,
                 RunReport& report)
      : config_(config),
        evaluator_(std::move(evaluator)),
        tsv_(tsv),
        tracer_(tracer),
        timer_(timer),
        driver_(driver),
        store_(store),
        shards_(shards),
        report_(report) {}

  // Queues the current model for evaluation; `must` ones are never skipped.
  void Submit(bool must);
  // Records the results that came since the last call; policies that
  // decide by accuracy (sync-switch) see each until the target is reached.
  void Collect();
  // At the end of the run: with `wait`, the snapshots queued still count
  // (their results are collected); else they are dropped.
  void Finish(bool wait);
  // DataLoss once the first evaluation after --resume had a loss that is
  // not finite: a model that cannot train, and the run ends with this.
  const Status& unfit() const { return unfit_; }
  // Snapshots not evaluated: evaluation fell behind.
  int64_t skipped() const { return evaluator_->skipped(); }
  // A sharded snapshot the other shards completed.
  void SubmitWhole(Snapshot snapshot, bool must) {
    evaluator_->SubmitOrSkip(std::move(snapshot), must);
  }

 private:
  const ServerConfig& config_;
  const std::unique_ptr<SnapshotEvaluator> evaluator_;
  std::ostream& tsv_;
  trace::TraceWriter* const tracer_;
  const RunTimer& timer_;
  sync::DriverCore& driver_;
  ModelStore& store_;
  ShardCoordinator& shards_;
  RunReport& report_;

  TargetProgress target_progress_;  // evaluations meeting the target in a row
  bool resume_evaluated_ = false;   // the first evaluation after --resume came
  Status unfit_;                    // see unfit()
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_RUN_EVALUATIONS_H_
