// What dmlps-trace does with the records of one or more traces: merge them,
// summarise a run, convert them for Chrome/Perfetto, TSV or gnuplot. Every
// function reads records already decoded (see trace.h) and writes text or
// bytes to a stream, so the tests reach them without a process.
#ifndef DMLPS_TRACE_TOOLS_H_
#define DMLPS_TRACE_TOOLS_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/trace/trace.h"

namespace dmlps::trace {

// Sorts records by time; records at the same time keep their order.
void SortByTime(std::vector<Record>* records);

// Writes `records` sorted by time as one trace stream: a meta record (stamped
// with the first record's time, so that the same input gives the same bytes)
// then every record, re-encoded. IOError when the stream fails.
Status WriteMerged(std::vector<Record> records, std::ostream& out);

// One training run as the server recorded it: the records of a server node
// from a run/start instant to the next.
// One decision of the auto policy: a run/"policy decision" instant.
struct PolicyDecision {
  double seconds = 0;  // since the run's start
  int64_t iteration = 0;
  std::string running;
  std::string chosen;  // running: it stayed
  std::string reason;
  std::string measured;
  std::string predicted;  // "bsp=0.04 backup:1=0.0128 ...", seconds per BSP-equivalent iteration
  double decide_ms = 0;
};

struct RunSummary {
  std::string node;
  std::string policy;  // from the start instant; empty when it was not seen
  int64_t workers = 0;
  double target = 0;
  int64_t start_us = 0;
  bool reached = false;
  double time_to_accuracy_s = 0;  // the target instant's seconds, when reached
  int64_t target_iteration = 0;
  bool has_accuracy = false;
  double best_accuracy = 0;               // the highest accuracy counter of the run
  std::vector<PolicyDecision> decisions;  // in time order
};

// What one worker did, from its own spans and the server's push instants.
struct WorkerSummary {
  std::string node;
  int64_t steps = 0;
  int64_t samples = 0;
  double compute_s = 0;   // compute/step spans
  double straggle_s = 0;  // compute/straggle spans (emulated slowness)
  double comm_s = 0;      // spans of lane comm
  double wait_s = 0;      // spans of lane wait
  double active_s = 0;    // from the worker's first record to the end of its last
  double mean_batch = 0;  // samples per step
  int64_t pushes = 0;     // server push instants naming this worker
  double mean_staleness = 0;
  int64_t timed_steps = 0;   // steps with a busy time: compute and straggle spans by clock
  double median_step_s = 0;  // the median busy time of a step
  int64_t slow_steps = 0;    // steps over kStragglerFactor x the workers' median
  // "deterministic" (median step over the threshold), "transient" (more than
  // 1 step in 20 over it) or empty.
  std::string straggler;

  double Share(double seconds) const { return active_s > 0 ? seconds / active_s : 0; }
};

// A worker whose steps take more than this many times the workers' median
// step time is slow.
inline constexpr double kStragglerFactor = 1.5;

struct TraceSummary {
  std::vector<RunSummary> runs;
  std::vector<WorkerSummary> workers;  // by rank
  double median_step_s = 0;            // median of the workers' median step times
};

// Summarises the records of one run (or of several: one RunSummary each).
TraceSummary Summarize(const std::vector<Record>& records);

enum class SummaryFormat { kText, kTsv, kJson };
// Parses "text", "tsv" or "json".
Result<SummaryFormat> ParseSummaryFormat(std::string_view text);
void WriteSummary(const TraceSummary& summary, SummaryFormat format, std::ostream& out);

// Chrome Trace Event JSON (object form) that ui.perfetto.dev and
// chrome://tracing open: one process per node, one thread per lane, spans as
// complete events, instants, counters, and a flow arrow from each worker push
// to the server apply that follows its arrival.
void WriteChrome(const std::vector<Record>& records, std::ostream& out);

// A header, then one line per record: t_us, node, lane, kind, name, dur_us,
// args as key=value;key=value.
void WriteTsv(const std::vector<Record>& records, std::ostream& out);

struct PlotOptions {
  std::string kind = "tta";  // tta | gantt | batch | wait
  std::string term = "svg";  // svg | png | dumb
  double window_s = 20;      // gantt: how many seconds from the workers' start
};
// Checks a plot kind and a terminal name; InvalidArgument naming the choices.
Status ValidatePlotOptions(const PlotOptions& options);
// A self-contained gnuplot script, data inline. DataLoss when the records
// hold nothing to plot for that kind.
Status WritePlot(const std::vector<Record>& records, const PlotOptions& options, std::ostream& out);

}  // namespace dmlps::trace

#endif  // DMLPS_TRACE_TOOLS_H_
