// The end of a run as the log shows it. (The report file is
// WriteRunReport's, dmlps/server/server.h.)
#ifndef DMLPS_SERVER_RUN_REPORT_H_
#define DMLPS_SERVER_RUN_REPORT_H_

#include <cstdint>
#include <string>

#include "dmlps/server/server.h"
#include "dmlps/sync/summary.h"
#include "server/evaluation_log.h"

namespace dmlps::server {

// Logs the closing lines of a finished run of `policy`: its summary, the
// work that did not count (`skipped_snapshots` not evaluated,
// `dropped_pushes` dropped) and whether each of `targets` was reached.
void LogRunSummary(const RunReport& report, const std::string& policy, const Targets& targets,
                   int64_t skipped_snapshots, int64_t dropped_pushes);

// Why a run ended, as its workers are told: the target it had reached,
// an interruption, or a limit.
std::string EndReason(const RunReport& report, const Targets& targets);

// Logs what worker `rank` did over a run of `seconds`, for the closing summary.
void LogWorkerTotals(int64_t rank, const sync::WorkerTotals& totals, double seconds);

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_RUN_REPORT_H_
