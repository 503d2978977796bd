#include "server/run_evaluations.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace dmlps::server {

void RunEvaluations::Submit(bool must) {
  // The model of this version exists once its last chunk is applied: it is
  // stamped then (at once, unless a streamed push is still arriving).
  const int64_t iteration = driver_.iteration();
  const int64_t version = driver_.policy().version();
  const int64_t samples = driver_.samples_applied();
  if (shards_.sharded()) {
    // The other shards' slices complete it.
    const int64_t id = shards_.BeginSnapshot({0, iteration, version, samples, nullptr}, must);
    store_.Snapshot([this, id](std::shared_ptr<const std::vector<float>> values) {
      shards_.AddOwnSlice(id, timer_.Seconds(), *values);
    });
    return;
  }
  store_.Snapshot(
      [this, must, iteration, version, samples](std::shared_ptr<const std::vector<float>> values) {
        evaluator_->SubmitOrSkip({timer_.Seconds(), iteration, version, samples, std::move(values)},
                                 must);
      });
}

void RunEvaluations::Collect() {
  const std::vector<Evaluation> results = evaluator_->TakeResults();
  // An evaluator process's report cannot be checked here: the target
  // counts once the next evaluation meets it too.
  const Targets targets{config_.job.target_accuracy, config_.job.target_loss,
                        config_.remote_evaluator ? kRemoteConfirmations : 1};
  RecordEvaluations(results, targets, timer_.clock().start_us, tsv_, tracer_, &target_progress_,
                    &report_);
  if (!results.empty() && report_.resumed_iteration >= 0 && !resume_evaluated_) {
    // Within --resume-max-value, a model may still overflow on its way to a
    // loss: it would not train either, every update refused.
    resume_evaluated_ = true;
    const Evaluation& first = results.front();
    if (!std::isfinite(first.result.loss)) {
      unfit_ = Status::DataLoss(fmt::format(
          "{}: the model resumed has a loss of {} on the test set (iteration {}): a model that "
          "cannot train; training stopped",
          config_.resume,
          std::isnan(first.result.loss) ? std::string("NaN") : fmt::format("{}", first.result.loss),
          first.snapshot.iteration));
    }
  }
  // Policies that decide by accuracy (sync-switch) see each result.
  if (!report_.target_reached) {
    for (const Evaluation& e : results) driver_.Evaluated(e.result.accuracy);
  }
}

void RunEvaluations::Finish(bool wait) {
  if (!wait) {
    evaluator_->DropPending();
    return;
  }
  // Snapshots taken before the end still count: wait for their results.
  evaluator_->WaitIdle();
  Collect();
}

}  // namespace dmlps::server
