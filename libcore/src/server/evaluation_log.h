// What a run shows of its progress as evaluations finish: their TSV lines,
// log lines and trace counters, and the target they may reach. (The report
// at the end is WriteRunReport's, dmlps/server/server.h.)
#ifndef DMLPS_SERVER_EVALUATION_LOG_H_
#define DMLPS_SERVER_EVALUATION_LOG_H_

#include <cstdint>
#include <ostream>
#include <vector>

#include "dmlps/server/server.h"
#include "dmlps/trace/trace.h"
#include "server/evaluator.h"

namespace dmlps::server {

// Writes the header of the TSV that RecordEvaluations continues.
void WriteEvaluationHeader(std::ostream& tsv);

// Evaluations in a row that must meet the target when an evaluator process
// computes them: its report cannot be checked, and one report alone never
// ends a run.
inline constexpr int64_t kRemoteConfirmations = 2;

// What a run aims at: an accuracy to reach and a loss to get down to, each
// 0 for none. An evaluation meets them when it meets every one set; the
// target is reached once `confirmations` evaluations in a row have.
struct Targets {
  double accuracy = 0;
  double loss = 0;
  int64_t confirmations = 1;
  bool any() const { return accuracy > 0 || loss > 0; }
  bool MetBy(const model::EvalResult& result) const {
    return any() && (accuracy <= 0 || result.accuracy >= accuracy) &&
           (loss <= 0 || result.loss <= loss);
  }
};

// The evaluations meeting the target in a row so far, and the first of them.
struct TargetProgress {
  int64_t in_a_row = 0;
  Snapshot first;  // its params are not kept
};

// Records `results` (oldest first) in *report and shows them: a TSV line on
// `tsv`, a log line, and on `tracer` (when not null) a span and counters
// timed from the run's start `start_us`. The last of `targets.confirmations`
// in a row to meet `targets` (counted in *progress across calls) marks the
// target reached, at the first of them; the ones after it are ignored,
// since later snapshots do not change the answer.
void RecordEvaluations(const std::vector<Evaluation>& results, const Targets& targets,
                       int64_t start_us, std::ostream& tsv, trace::TraceWriter* tracer,
                       TargetProgress* progress, RunReport* report);

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_EVALUATION_LOG_H_
