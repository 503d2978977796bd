// What shard 0 does as its policy driver reports the run's progress:
// evaluations queued, checkpoints taken when due, and the limit, holds,
// policy switches and decisions logged and traced.
#ifndef DMLPS_SERVER_RUN_EVENTS_H_
#define DMLPS_SERVER_RUN_EVENTS_H_

#include <cstdint>

#include "dmlps/server/server.h"
#include "dmlps/sync/driver.h"
#include "dmlps/trace/trace.h"
#include "server/run_checkpoints.h"
#include "server/run_evaluations.h"

namespace dmlps::server {

class RunEventSink : public sync::RunEvents {
 public:
  // `tracer` null: none. All outlive this.
  RunEventSink(const ServerConfig& config, RunEvaluations& evaluations, RunCheckpoints& checkpoints,
               trace::TraceWriter* tracer)
      : config_(config), evaluations_(evaluations), checkpoints_(checkpoints), tracer_(tracer) {}

  void Evaluate(bool must) override { evaluations_.Submit(must); }
  void LimitReached() override;
  void IterationAdvanced() override { checkpoints_.MaybeTake(); }
  void HoldChanged(bool holding, int64_t live) override;
  void Switched(const sync::Switch& change) override;
  void Decided(const sync::Decision& decision) override;

 private:
  const ServerConfig& config_;
  RunEvaluations& evaluations_;
  RunCheckpoints& checkpoints_;
  trace::TraceWriter* const tracer_;
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_RUN_EVENTS_H_
