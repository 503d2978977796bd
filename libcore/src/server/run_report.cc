// The file dmlps-server --report leaves for scripts and dmlps-bench, and
// the closing lines of the log.
#include "server/run_report.h"

#include <spdlog/spdlog.h>

#include <ostream>
#include <string>

#include "dmlps/base/printable.h"
#include "dmlps/server/server.h"

namespace dmlps::server {

void WriteRunReport(const RunReport& report, std::ostream& out) {
  // One line per key: the message must not break the format.
  const std::string last_lost = Printable(report.last_lost);
  out << fmt::format(
      "target_reached\t{:d}\nseconds_to_target\t{}\niterations_to_target\t{}\n"
      "samples_to_target\t{}\niterations\t{}\nsamples\t{}\nseconds\t{}\naccuracy\t{}\n"
      "loss\t{}\ncompute_ratio_mean\t{}\ncompute_ratio_min\t{}\nwait_share\t{}\n"
      "wasted_samples\t{}\nsignal\t{}\nworkers_lost\t{}\nlast_lost\t{}\nworkers_joined\t{}\n"
      "resumed_iteration\t{}\ncheckpoints\t{}\nbytes_per_worker\t{}\nmodel_bytes_per_worker\t{}\n",
      report.target_reached, report.seconds_to_target, report.iterations_to_target,
      report.samples_to_target, report.iterations, report.samples, report.seconds,
      report.last_eval.accuracy, report.last_eval.loss, report.compute_ratio_mean,
      report.compute_ratio_min, report.wait_share, report.wasted_samples, report.signal,
      report.workers_lost, last_lost, report.workers_joined, report.resumed_iteration,
      report.checkpoints, report.bytes_per_worker, report.model_bytes_per_worker);
}

std::string EndReason(const RunReport& report, const Targets& targets) {
  if (report.target_reached) {
    // Workers print it: the target the run had.
    return targets.accuracy > 0 && targets.loss > 0 ? "target accuracy and loss reached"
           : targets.loss > 0                       ? "target loss reached"
                                                    : "target accuracy reached";
  }
  return report.signal != 0 ? "server interrupted" : "limit reached";
}

void LogWorkerTotals(int64_t rank, const sync::WorkerTotals& totals, double seconds) {
  const sync::WorkerTotals& t = totals;
  spdlog::info(
      "worker {}: {} steps, {} samples, compute {:.1f} s, straggle {:.1f} s, "
      "wait {:.1f} s, compute ratio {:.2f}, {} refused, {:.1f} MB sent",
      rank, t.steps, t.samples, t.compute_s, t.straggle_s, t.wait_s, sync::ComputeRatio(t, seconds),
      t.refused, static_cast<double>(t.bytes_sent) * 1e-6);
}

void LogRunSummary(const RunReport& report, const std::string& policy, const Targets& targets,
                   int64_t skipped_snapshots, int64_t dropped_pushes) {
  spdlog::info(
      "summary: policy {}, {:.2f} s, {} iterations, compute ratio mean {:.3f} min {:.3f}, "
      "wasted samples {}",
      policy, report.seconds, report.iterations, report.compute_ratio_mean,
      report.compute_ratio_min, report.wasted_samples);
  if (skipped_snapshots > 0) {
    spdlog::info("{} snapshots not evaluated: evaluation fell behind", skipped_snapshots);
  }
  if (dropped_pushes > 0) {
    spdlog::info("{} pushes dropped ({} samples wasted)", dropped_pushes, report.wasted_samples);
  }
  if (report.target_reached && targets.accuracy > 0) {
    spdlog::info("reached accuracy {:.4f} >= {} after {:.2f} s and {} iterations",
                 report.last_eval.accuracy, targets.accuracy, report.seconds_to_target,
                 report.iterations_to_target);
  } else if (targets.accuracy > 0) {
    spdlog::warn("target accuracy {} not reached (best {:.4f}, last {:.4f})", targets.accuracy,
                 report.best_accuracy, report.last_eval.accuracy);
  }
  if (report.target_reached && targets.loss > 0) {
    spdlog::info("reached loss {:.4f} <= {} after {:.2f} s and {} iterations",
                 report.last_eval.loss, targets.loss, report.seconds_to_target,
                 report.iterations_to_target);
  } else if (targets.loss > 0) {
    spdlog::warn("target loss {} not reached (last {:.4f})", targets.loss, report.last_eval.loss);
  }
}

}  // namespace dmlps::server
