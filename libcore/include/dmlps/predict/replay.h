// What dmlps-predict does: take each worker's history of step speeds out of
// its trace, replay it through speed predictors and score their one-step-
// ahead forecasts; optionally, the LB-BSP batch sizes the last forecasts
// give. Everything works on records already decoded, so the tests reach it
// without a process.
#ifndef DMLPS_PREDICT_REPLAY_H_
#define DMLPS_PREDICT_REPLAY_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/base/output_format.h"
#include "dmlps/base/status.h"
#include "dmlps/predict/predictor.h"
#include "dmlps/trace/trace.h"

namespace dmlps::predict {

// One worker's steps, in clock order.
struct WorkerHistory {
  std::string node;  // "worker-3"
  std::vector<int64_t> clocks;
  std::vector<Observation> steps;
};

// Each worker's history (workers by rank). One observation per clock that
// has compute/step spans: batch = their samples, speed = samples / busy
// seconds, busy = the compute/step spans plus the compute/straggle spans of
// that clock; cpu and memory from the comm/push span of the clock (0 when
// there is none). A clock with no samples or no busy time is left out.
std::vector<WorkerHistory> ExtractHistories(const std::vector<trace::Record>& records);

// The definitions behind the change and spike columns (dmlps-predict(1)).
inline constexpr int64_t kChangeWindow = 10;     // K: steps on each side of a change
inline constexpr double kChangeFactor = 2;       // a change or spike is a factor of 2 at least
inline constexpr double kFollowTolerance = 0.2;  // following: within 20% of the new level
inline constexpr int64_t kFollowHorizon = 20;    // ... within this many steps, else counts 21

// What a lasting change compares on each side of a step: the mean log of
// the values, or their lower quartile, which values raised now and then (a
// step time delayed in fewer than three steps of four) do not move.
enum class ChangeLevel { kMeanLog, kLowerQuartile };

// Lasting changes of level: the steps c where the level (`level`) of
// [c, c + K) differs from that of [c - K, c) by a factor of kChangeFactor or
// more and by more than at any other step within K of c (the earliest of
// equals).
std::vector<int64_t> FindLastingChanges(const std::vector<double>& speed,
                                        ChangeLevel level = ChangeLevel::kMeanLog);

// The q-quantile of values[begin, end), the lower of two neighbours: always
// one of the values (0 for an empty range).
double LowerQuantile(const std::vector<double>& values, int64_t begin, int64_t end, double q);

// One-step spikes: the steps t with three steps on each side whose speed
// differs from the median of those six by kChangeFactor or more, while the
// steps t - 1 and t + 1 are within sqrt(kChangeFactor) of that median.
std::vector<int64_t> FindSpikes(const std::vector<double>& speed);

// Replays a history: forecast[t] is the predictor's forecast of step t made
// after observing steps 0 to t - 1 (forecast[0] = its forecast before any),
// forecast[n] the forecast for the step after the last. Size n + 1.
std::vector<double> Replay(SpeedPredictor* predictor, const std::vector<Observation>& steps);

// How well forecasts matched a series; sums, so that scores add up over
// workers.
struct Score {
  int64_t steps = 0;          // steps in the series
  int64_t predictions = 0;    // steps with a forecast (positive), scored
  double squared_error = 0;   // sum of (forecast - speed)^2
  double relative_error = 0;  // sum of |forecast - speed| / speed
  int64_t changes = 0;        // lasting changes found
  double follow_steps = 0;    // sum over them of the steps to follow
  int64_t spikes = 0;         // one-step spikes found
  double spike_moved = 0;     // sum over them of the share of the spike taken in

  void Add(const Score& other);
  double Rmse() const;               // samples/s; NaN without predictions
  double MapePercent() const;        // NaN without predictions
  double MeanFollowSteps() const;    // NaN without changes
  double SpikeMovedPercent() const;  // NaN without spikes
};

// Scores forecasts (as Replay gives them) of a series:
//   RMSE and MAPE over the steps t >= 0 with forecast[t] > 0;
//   for each lasting change at c with new level L (the median speed of
//     [c, c + K)), the steps to follow it: the least k in 1..kFollowHorizon
//     with |forecast[c + k] - L| <= kFollowTolerance * L, i.e. after seeing
//     k steps of the new level; kFollowHorizon + 1 when there is none;
//   for each spike at t, how much it moved the forecast:
//     |forecast[t + 1] - forecast[t]| / |speed[t] - forecast[t]| (1 for the
//     last value, 0 for a forecast the spike left alone).
// REQUIRES: forecast.size() == speed.size() + 1.
Score ScoreForecasts(const std::vector<double>& speed, const std::vector<double>& forecast);

struct ReplayOptions {
  std::vector<std::string> predictors = {"last", "ema", "arima", "narx"};
  PredictorOptions predictor_options;
  int64_t plan = 0;  // a global batch B to plan for; 0: no plan
};

// One row of the report: a worker (or "all") under one predictor.
struct ReplayRow {
  std::string node;
  std::string predictor;
  Score score;
  double next_speed = 0;  // the forecast for the step after the last (plan only)
  int64_t batch = 0;      // the planned batch (plan only; "all": B)
};

struct ReplayReport {
  std::vector<ReplayRow> rows;  // by worker, then predictor; then the "all" rows
  int64_t plan = 0;
};

// Replays every worker's history through every predictor of `options`.
// InvalidArgument for bad predictor settings, DataLoss when the records hold
// no worker steps.
Result<ReplayReport> ReplayTraces(const std::vector<trace::Record>& records,
                                  const ReplayOptions& options);

// Parses a comma-separated list of predictor names, each at most once.
Result<std::vector<std::string>> ParsePredictorList(std::string_view text);

using ReportFormat = OutputFormat;
// Parses "table", "tsv" or "json" (ParseOutputFormat).
Result<ReportFormat> ParseReportFormat(std::string_view text);
void WriteReplayReport(const ReplayReport& report, ReportFormat format, std::ostream& out);

}  // namespace dmlps::predict

#endif  // DMLPS_PREDICT_REPLAY_H_
