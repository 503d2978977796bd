#include "server/run_events.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "dmlps/sync/switching.h"

namespace dmlps::server {

void RunEventSink::LimitReached() {
  spdlog::info("iteration limit of {} reached", config_.job.max_iterations);
}

void RunEventSink::HoldChanged(bool holding, int64_t live) {
  if (holding) {
    spdlog::warn(
        "training holds: {} live worker{}, fewer than --min-workers {}; waiting for "
        "workers to join",
        live, live == 1 ? "" : "s", config_.min_workers);
    if (tracer_) tracer_->Instant("run", "hold", trace::NowMicros(), {{"live", live}});
    return;
  }
  spdlog::info("training goes on with {} live workers", live);
  if (tracer_) tracer_->Instant("run", "resume", trace::NowMicros(), {{"live", live}});
}

void RunEventSink::Switched(const sync::Switch& change) {
  spdlog::info("policy switch {}: {} -> {} at iteration {} ({}: {:.4g}, threshold {:.4g})",
               change.done ? "done" : "decided", change.from, change.to, change.iteration,
               change.why, change.measured, change.threshold);
  if (!tracer_) return;
  tracer_->Instant("run", change.done ? "policy switched" : "policy switch decided",
                   trace::NowMicros(),
                   {{"from", change.from},
                    {"to", change.to},
                    {"why", change.why},
                    {"measured", change.measured},
                    {"threshold", change.threshold},
                    {"iteration", change.iteration}});
}

void RunEventSink::Decided(const sync::Decision& decision) {
  spdlog::info("{}", sync::DescribeDecision(decision));
  if (!tracer_) return;
  trace::Args args = {{"running", decision.running},
                      {"chosen", decision.chosen},
                      {"reason", decision.reason},
                      {"measured", decision.measured},
                      {"predicted", sync::DescribePredictions(decision)},
                      {"remaining", decision.remaining},
                      {"gain_s", decision.gain_s},
                      {"cost_s", decision.cost_s},
                      {"decide_ms", decision.decide_ms},
                      {"iteration", decision.iteration}};
  tracer_->Instant("run", "policy decision", trace::NowMicros(), std::move(args));
}

}  // namespace dmlps::server
