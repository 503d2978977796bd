// The table dmlps-bench run and dmlps-bench sim both answer: per policy, the
// medians and ranges over repeated runs of time to accuracy and of where the
// workers' time went.
#ifndef DMLPS_BENCH_REPORT_H_
#define DMLPS_BENCH_REPORT_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/base/output_format.h"
#include "dmlps/base/status.h"

namespace dmlps::bench {

// A stretch of a run under one policy: its global iterations.
struct PolicySpan {
  std::string policy;  // as MakePolicy names it, e.g. "backup:1"
  int64_t iterations = 0;
};

// The codecs of a run that compresses nothing (CodecsName's spelling).
inline constexpr std::string_view kDenseCodecs = "none/none";

// One run of one policy, measured (run) or simulated (sim).
struct RunResult {
  std::string policy;                // the entry as listed, e.g. "ssp:3"
  std::string codecs{kDenseCodecs};  // push/pull, as CodecsName names them
  int64_t repeat = 0;                // 1-based
  bool reached = false;
  // Up to the first snapshot at or above the target when reached, else to the end.
  double seconds = 0;      // training time (wall or virtual), evaluation not counted
  int64_t iterations = 0;  // global iterations (see Policy::iteration)
  int64_t samples = 0;     // samples whose gradients went into the model
  // Over the whole run:
  double compute_ratio_mean = 0;  // over workers: (compute + emulated slowness) / run time
  double compute_ratio_min = 0;
  double wait_share = 0;        // mean over workers of the time spent waiting for the server
  int64_t wasted_samples = 0;   // computed, then dropped by the policy
  double bytes_per_worker = 0;  // mean over workers of what each sent the server
  double accuracy = 0;          // test accuracy of the last evaluated snapshot
  std::string failure;          // why the run failed (empty: it ran to its end)
  // A policy that switches (sync-switch, auto), simulated: the policies it
  // ran, in turn, up to the end counted above. Empty otherwise.
  std::vector<PolicySpan> ran_under;
};

// How one run goes while it lasts (measured or simulated), for a progress line.
struct Progress {
  double elapsed_s = 0;  // wall time since the run started
  double seconds = 0;    // training time of the newest evaluation
  int64_t iteration = 0;
  double accuracy = -1;  // -1: no evaluation yet
};

// The median, min and max of one column over the runs counted.
struct Spread {
  double median = 0;
  double min = 0;
  double max = 0;
  int64_t count = 0;  // runs counted; 0: no value
};
Spread SpreadOf(std::vector<double> values);

struct PolicyRow {
  std::string policy;
  std::string codecs{kDenseCodecs};
  int64_t runs = 0;
  int64_t reached = 0;
  // Over the runs that reached the target:
  Spread seconds;
  Spread iterations;
  Spread samples;
  // Over all runs that did not fail:
  Spread compute_ratio_mean;
  Spread compute_ratio_min;
  Spread wait_share;
  Spread wasted_samples;
  Spread bytes_per_worker;
  Spread accuracy;
  // Median seconds to target of the first policy listed over this one's;
  // empty when either never reached the target.
  std::optional<double> speedup;
};

// One row per policy and codec pair, in the order of `policies` and, within
// each, of `codecs` (names as RunResult::codecs has them); runs of policies
// or codecs not listed are ignored.
std::vector<PolicyRow> Tabulate(const std::vector<RunResult>& runs,
                                const std::vector<std::string>& policies,
                                const std::vector<std::string>& codecs = {
                                    std::string(kDenseCodecs)});

// Writes `header` and `cells` as columns aligned for reading: the first
// `left` columns (names) padded on the right, the others (numbers) on the
// left, two spaces between columns.
void WriteAligned(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& cells, size_t left,
                  std::ostream& out);

using Format = OutputFormat;
// Parses "table", "tsv" or "json" (ParseOutputFormat).
Result<Format> ParseFormat(std::string_view text);

// Writes the rows. `title` (table: a first line; json: "title") says what ran;
// json also lists every run under "runs". A column (json: a field)
// "codecs" follows the policy's when some row's codecs are not kDenseCodecs.
void WriteRows(const std::vector<PolicyRow>& rows, const std::vector<RunResult>& runs,
               std::string_view title, Format format, std::ostream& out);

}  // namespace dmlps::bench

#endif  // DMLPS_BENCH_REPORT_H_
