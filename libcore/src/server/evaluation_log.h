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

// Records `results` (oldest first) in *report and shows them: a TSV line on
// `tsv`, a log line, and on `tracer` (when not null) a span and counters
// timed from the run's start `start_us`. The first to reach
// `target_accuracy` (0: none) marks the target reached; the ones after it
// are ignored, since later snapshots do not change the answer.
void RecordEvaluations(const std::vector<Evaluation>& results, double target_accuracy,
                       int64_t start_us, std::ostream& tsv, trace::TraceWriter* tracer,
                       RunReport* report);

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_EVALUATION_LOG_H_
