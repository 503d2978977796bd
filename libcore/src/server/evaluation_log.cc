#include "server/evaluation_log.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace dmlps::server {

void WriteEvaluationHeader(std::ostream& tsv) {
  tsv << "seconds\titeration\taccuracy\tloss\n" << std::flush;
}

void RecordEvaluations(const std::vector<Evaluation>& results, const Targets& targets,
                       int64_t start_us, std::ostream& tsv, trace::TraceWriter* tracer,
                       TargetProgress* progress, RunReport* report) {
  for (const Evaluation& e : results) {
    if (report->target_reached) break;  // later snapshots do not change the answer
    report->last_eval = e.result;
    report->best_accuracy = std::max(report->best_accuracy, e.result.accuracy);
    tsv << fmt::format("{:.3f}\t{}\t{:.4f}\t{:.4f}\n", e.snapshot.seconds, e.snapshot.iteration,
                       e.result.accuracy, e.result.loss)
        << std::flush;
    spdlog::info("{:7.2f} s  iteration {:6}  accuracy {:.4f}  loss {:.4f}", e.snapshot.seconds,
                 e.snapshot.iteration, e.result.accuracy, e.result.loss);
    if (tracer != nullptr) {
      const int64_t snapshot_us = start_us + static_cast<int64_t>(e.snapshot.seconds * 1e6);
      tracer->Span("eval", "eval", e.start_us, e.duration_us,
                   {{"iteration", e.snapshot.iteration},
                    {"accuracy", e.result.accuracy},
                    {"loss", e.result.loss},
                    {"snapshot_us", snapshot_us}});
      tracer->Counter("accuracy", snapshot_us, e.result.accuracy,
                      {{"iteration", e.snapshot.iteration}});
      tracer->Counter("loss", snapshot_us, e.result.loss, {{"iteration", e.snapshot.iteration}});
    }
    if (!targets.MetBy(e.result)) {
      progress->in_a_row = 0;
      continue;
    }
    if (progress->in_a_row++ == 0) {
      progress->first = {e.snapshot.seconds, e.snapshot.iteration, e.snapshot.version,
                         e.snapshot.samples, nullptr};
    }
    if (progress->in_a_row < targets.confirmations) {
      spdlog::info(
          "the target is met at iteration {}; it counts once {} evaluation{} in a row "
          "meet{} it",
          e.snapshot.iteration, targets.confirmations, targets.confirmations == 1 ? "" : "s",
          targets.confirmations == 1 ? "s" : "");
      continue;
    }
    const Snapshot& first = progress->first;
    report->target_reached = true;
    report->seconds_to_target = first.seconds;
    report->iterations_to_target = first.iteration;
    report->samples_to_target = first.samples;
    if (tracer != nullptr) {
      tracer->Instant("run", "target", trace::NowMicros(),
                      {{"accuracy", e.result.accuracy},
                       {"loss", e.result.loss},
                       {"seconds", first.seconds},
                       {"iteration", first.iteration}});
    }
  }
}

}  // namespace dmlps::server
