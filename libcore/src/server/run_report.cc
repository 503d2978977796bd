// The file dmlps-server --report leaves for scripts and dmlps-bench.
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <ostream>
#include <string>

#include "dmlps/server/server.h"

namespace dmlps::server {

void WriteRunReport(const RunReport& report, std::ostream& out) {
  // One line per key: the message must not break the format.
  std::string last_lost = report.last_lost;
  std::replace_if(last_lost.begin(), last_lost.end(), [](char c) { return c == '\t' || c == '\n'; }, ' ');
  out << fmt::format(
      "target_reached\t{:d}\nseconds_to_target\t{}\niterations_to_target\t{}\n"
      "samples_to_target\t{}\niterations\t{}\nsamples\t{}\nseconds\t{}\naccuracy\t{}\n"
      "loss\t{}\ncompute_ratio_mean\t{}\ncompute_ratio_min\t{}\nwait_share\t{}\n"
      "wasted_samples\t{}\nsignal\t{}\nworkers_lost\t{}\nlast_lost\t{}\nworkers_joined\t{}\n"
      "resumed_iteration\t{}\ncheckpoints\t{}\n",
      report.target_reached, report.seconds_to_target, report.iterations_to_target,
      report.samples_to_target, report.iterations, report.samples, report.seconds,
      report.last_eval.accuracy, report.last_eval.loss, report.compute_ratio_mean,
      report.compute_ratio_min, report.wait_share, report.wasted_samples, report.signal,
      report.workers_lost, last_lost, report.workers_joined, report.resumed_iteration,
      report.checkpoints);
}

}  // namespace dmlps::server
