#include "dmlps/predict/replay.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "dmlps/base/json.h"
#include "dmlps/predict/batches.h"
#include "trace/records.h"

namespace dmlps::predict {
namespace {

constexpr double kMicros = 1e6;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The rank in "worker-R", or -1 for another name.
int64_t WorkerRank(const std::string& node) {
  if (node.rfind("worker-", 0) != 0) return -1;
  int64_t rank = -1;
  const char* first = node.data() + 7;
  const char* last = node.data() + node.size();
  const auto [end, ec] = std::from_chars(first, last, rank);
  return ec == std::errc() && end == last ? rank : -1;
}

double Median(std::vector<double> values) {
  if (values.empty()) return kNaN;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

// The mean of log(speed) over [begin, end).
double MeanLog(const std::vector<double>& speed, int64_t begin, int64_t end) {
  double sum = 0;
  for (int64_t i = begin; i < end; ++i) sum += std::log(speed[i]);
  return sum / static_cast<double>(end - begin);
}

}  // namespace

std::vector<WorkerHistory> ExtractHistories(const std::vector<trace::Record>& records) {
  struct Step {
    double samples = 0;
    double busy_s = 0;
    double cpu = 0;
    double memory = 0;
    bool computed = false;
  };
  // By (rank, node) so that worker-10 follows worker-9.
  std::map<std::pair<int64_t, std::string>, std::map<int64_t, Step>> workers;
  for (const trace::Record& r : records) {
    if (r.node.rfind("worker", 0) != 0 || !r.Has("clock")) continue;
    const bool step = trace::IsSpan(r, "compute", "step");
    const bool straggle = trace::IsSpan(r, "compute", "straggle");
    const bool push = trace::IsSpan(r, "comm", "push");
    if (!step && !straggle && !push) continue;
    Step& s = workers[{WorkerRank(r.node), r.node}][static_cast<int64_t>(r.Number("clock"))];
    if (step) {
      s.computed = true;
      s.samples += r.Number("samples");
      s.busy_s += static_cast<double>(r.dur_us) / kMicros;
    } else if (straggle) {
      s.busy_s += static_cast<double>(r.dur_us) / kMicros;
    } else {
      s.cpu = r.Number("cpu");
      s.memory = r.Number("memory");
    }
  }
  std::vector<WorkerHistory> histories;
  for (const auto& [key, steps] : workers) {
    WorkerHistory history;
    history.node = key.second;
    for (const auto& [clock, s] : steps) {
      if (!s.computed || !(s.samples > 0) || !(s.busy_s > 0)) continue;
      history.clocks.push_back(clock);
      history.steps.push_back(
          {s.samples / s.busy_s, s.cpu, s.memory, static_cast<int64_t>(std::llround(s.samples))});
    }
    if (!history.steps.empty()) histories.push_back(std::move(history));
  }
  return histories;
}

double LowerQuantile(const std::vector<double>& values, int64_t begin, int64_t end, double q) {
  std::vector<double> part(values.begin() + begin, values.begin() + end);
  if (part.empty()) return 0;
  const auto at = static_cast<std::ptrdiff_t>(static_cast<double>(part.size() - 1) * q);
  std::nth_element(part.begin(), part.begin() + at, part.end());
  return part[static_cast<size_t>(at)];
}

std::vector<int64_t> FindLastingChanges(const std::vector<double>& speed, ChangeLevel level) {
  const int64_t n = static_cast<int64_t>(speed.size());
  const int64_t k = kChangeWindow;
  if (n < 2 * k) return {};
  // The log of a side's level; a quartile of 0 has none, and no jump.
  auto log_level = [&](int64_t from, int64_t to) -> std::optional<double> {
    if (level == ChangeLevel::kMeanLog) return MeanLog(speed, from, to);
    const double q = LowerQuantile(speed, from, to, 0.25);
    if (!(q > 0)) return std::nullopt;
    return std::log(q);
  };
  // jump[c]: |log level after - log level before| at c, for c in [K, n - K].
  std::vector<double> jump(n + 1, 0);
  for (int64_t c = k; c <= n - k; ++c) {
    const std::optional<double> before = log_level(c - k, c);
    const std::optional<double> after = log_level(c, c + k);
    if (before && after) jump[c] = std::abs(*after - *before);
  }
  std::vector<int64_t> changes;
  const double threshold = std::log(kChangeFactor);
  for (int64_t c = k; c <= n - k; ++c) {
    if (!(jump[c] >= threshold)) continue;
    bool peak = true;
    for (int64_t o = std::max(k, c - k); o <= std::min(n - k, c + k) && peak; ++o) {
      // Strictly the largest, or as large as any later one and larger than
      // any earlier one: the earliest of equals.
      peak = o == c || (o < c ? jump[o] < jump[c] : jump[o] <= jump[c]);
    }
    if (peak) changes.push_back(c);
  }
  return changes;
}

std::vector<int64_t> FindSpikes(const std::vector<double>& speed) {
  const int64_t n = static_cast<int64_t>(speed.size());
  const double factor = std::log(kChangeFactor);
  std::vector<int64_t> spikes;
  for (int64_t t = 3; t + 3 < n; ++t) {
    const double reference = Median(
        {speed[t - 3], speed[t - 2], speed[t - 1], speed[t + 1], speed[t + 2], speed[t + 3]});
    const auto off = [&](int64_t i) { return std::abs(std::log(speed[i] / reference)); };
    if (off(t) >= factor && off(t - 1) < factor / 2 && off(t + 1) < factor / 2) {
      spikes.push_back(t);
    }
  }
  return spikes;
}

std::vector<double> Replay(SpeedPredictor* predictor, const std::vector<Observation>& steps) {
  std::vector<double> forecast;
  forecast.reserve(steps.size() + 1);
  forecast.push_back(predictor->Predict());
  for (const Observation& step : steps) {
    predictor->Observe(step);
    forecast.push_back(predictor->Predict());
  }
  return forecast;
}

void Score::Add(const Score& other) {
  steps += other.steps;
  predictions += other.predictions;
  squared_error += other.squared_error;
  relative_error += other.relative_error;
  changes += other.changes;
  follow_steps += other.follow_steps;
  spikes += other.spikes;
  spike_moved += other.spike_moved;
}

double Score::Rmse() const {
  return predictions > 0 ? std::sqrt(squared_error / static_cast<double>(predictions)) : kNaN;
}
double Score::MapePercent() const {
  return predictions > 0 ? 100 * relative_error / static_cast<double>(predictions) : kNaN;
}
double Score::MeanFollowSteps() const {
  return changes > 0 ? follow_steps / static_cast<double>(changes) : kNaN;
}
double Score::SpikeMovedPercent() const {
  return spikes > 0 ? 100 * spike_moved / static_cast<double>(spikes) : kNaN;
}

Score ScoreForecasts(const std::vector<double>& speed, const std::vector<double>& forecast) {
  Score score;
  const int64_t n = static_cast<int64_t>(speed.size());
  score.steps = n;
  for (int64_t t = 0; t < n; ++t) {
    if (!(forecast[t] > 0)) continue;
    const double error = forecast[t] - speed[t];
    ++score.predictions;
    score.squared_error += error * error;
    score.relative_error += std::abs(error) / speed[t];
  }
  for (const int64_t c : FindLastingChanges(speed)) {
    const double level =
        Median(std::vector<double>(speed.begin() + c, speed.begin() + c + kChangeWindow));
    int64_t steps = kFollowHorizon + 1;
    for (int64_t k = 1; k <= kFollowHorizon && c + k <= n; ++k) {
      if (std::abs(forecast[c + k] - level) <= kFollowTolerance * level) {
        steps = k;
        break;
      }
    }
    ++score.changes;
    score.follow_steps += static_cast<double>(steps);
  }
  for (const int64_t t : FindSpikes(speed)) {
    const double surprise = std::abs(speed[t] - forecast[t]);
    if (!(forecast[t] > 0) || !(surprise > 0)) continue;
    ++score.spikes;
    score.spike_moved += std::abs(forecast[t + 1] - forecast[t]) / surprise;
  }
  return score;
}

Result<std::vector<std::string>> ParsePredictorList(std::string_view text) {
  std::vector<std::string> names;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string name(
        text.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (name.empty()) {
      return Status::InvalidArgument("an empty name in the predictor list '" + std::string(text) +
                                     "'");
    }
    if (name != "last" && name != "ema" && name != "arima" && name != "narx") {
      return Status::InvalidArgument("unknown speed predictor '" + name + "' (expected " +
                                     std::string(PredictorNames()) + ")");
    }
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      return Status::InvalidArgument("predictor '" + name + "' named twice");
    }
    names.push_back(name);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return names;
}

Result<ReplayReport> ReplayTraces(const std::vector<trace::Record>& records,
                                  const ReplayOptions& options) {
  for (const std::string& name : options.predictors) {
    if (Status s = ValidatePredictorOptions(name, options.predictor_options); !s.ok()) return s;
  }
  const std::vector<WorkerHistory> histories = ExtractHistories(records);
  if (histories.empty()) {
    return Status::DataLoss("no worker steps in the traces (compute/step spans with a clock)");
  }
  ReplayReport report;
  report.plan = options.plan;
  const size_t workers = histories.size();
  const size_t predictors = options.predictors.size();
  // rows[w * predictors + p] while replaying; the "all" rows after.
  std::vector<ReplayRow> all(predictors);
  for (const WorkerHistory& history : histories) {
    std::vector<double> speed;
    speed.reserve(history.steps.size());
    for (const Observation& o : history.steps) speed.push_back(o.speed);
    for (size_t p = 0; p < predictors; ++p) {
      Result<std::unique_ptr<SpeedPredictor>> predictor =
          MakePredictor(options.predictors[p], options.predictor_options);
      if (!predictor.ok()) return predictor.status();
      const std::vector<double> forecast = Replay(predictor->get(), history.steps);
      ReplayRow row;
      row.node = history.node;
      row.predictor = options.predictors[p];
      row.score = ScoreForecasts(speed, forecast);
      row.next_speed = forecast.back();
      all[p].score.Add(row.score);
      report.rows.push_back(std::move(row));
    }
  }
  if (options.plan > 0) {
    // The batches LB-BSP would set now: its allocation, from an even split.
    const int64_t n = static_cast<int64_t>(workers);
    std::vector<int64_t> even(workers);
    for (int64_t w = 0; w < n; ++w) even[w] = options.plan / n + (w < options.plan % n ? 1 : 0);
    const std::vector<int64_t> caps(workers, 0);
    for (size_t p = 0; p < predictors; ++p) {
      std::vector<double> speed(workers);
      for (size_t w = 0; w < workers; ++w) speed[w] = report.rows[w * predictors + p].next_speed;
      const std::vector<int64_t> batch = AnalyticBatches(options.plan, speed, even, caps);
      for (size_t w = 0; w < workers; ++w) {
        report.rows[w * predictors + p].batch = batch[w];
        all[p].next_speed += speed[w];
      }
      all[p].batch = options.plan;
    }
  }
  for (size_t p = 0; p < predictors; ++p) {
    all[p].node = "all";
    all[p].predictor = options.predictors[p];
    report.rows.push_back(std::move(all[p]));
  }
  return report;
}

Result<ReportFormat> ParseReportFormat(std::string_view text) { return ParseOutputFormat(text); }

namespace {

// A number for the table or the TSV: "-" when there is none.
std::string Cell(double value, int decimals) {
  if (!std::isfinite(value)) return "-";
  return fmt::format("{:.{}f}", value, decimals);
}

std::string TsvNumber(double value) {
  return std::isfinite(value) ? fmt::format("{}", value) : "-";
}

}  // namespace

void WriteReplayReport(const ReplayReport& report, ReportFormat format, std::ostream& out) {
  const bool plan = report.plan > 0;
  if (format == ReportFormat::kJson) {
    out << "{\"plan\":";
    if (plan) {
      out << report.plan;
    } else {
      out << "null";
    }
    out << ",\"rows\":[";
    for (size_t i = 0; i < report.rows.size(); ++i) {
      const ReplayRow& row = report.rows[i];
      const Score& s = row.score;
      out << (i > 0 ? "," : "") << "\n{\"node\":";
      WriteJsonString(row.node, out);
      out << ",\"predictor\":";
      WriteJsonString(row.predictor, out);
      out << ",\"steps\":" << s.steps << ",\"predictions\":" << s.predictions
          << ",\"rmse\":" << JsonNumber(s.Rmse()) << ",\"mape_pct\":" << JsonNumber(s.MapePercent())
          << ",\"changes\":" << s.changes << ",\"follow_steps\":" << JsonNumber(s.MeanFollowSteps())
          << ",\"spikes\":" << s.spikes
          << ",\"spike_moved_pct\":" << JsonNumber(s.SpikeMovedPercent());
      if (plan)
        out << ",\"next_speed\":" << JsonNumber(row.next_speed) << ",\"batch\":" << row.batch;
      out << "}";
    }
    out << "\n]}\n";
    return;
  }
  if (format == ReportFormat::kTsv) {
    out << "node\tpredictor\tsteps\tpredictions\trmse\tmape_pct\tchanges\tfollow_steps\tspikes\t"
           "spike_moved_pct";
    out << (plan ? "\tnext_speed\tbatch\n" : "\n");
    for (const ReplayRow& row : report.rows) {
      const Score& s = row.score;
      out << fmt::format("{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}", row.node, row.predictor, s.steps,
                         s.predictions, TsvNumber(s.Rmse()), TsvNumber(s.MapePercent()), s.changes,
                         TsvNumber(s.MeanFollowSteps()), s.spikes,
                         TsvNumber(s.SpikeMovedPercent()));
      if (plan) out << fmt::format("\t{}\t{}", TsvNumber(row.next_speed), row.batch);
      out << "\n";
    }
    return;
  }
  out << fmt::format("{:<10} {:<9} {:>6} {:>12} {:>7} {:>7} {:>6} {:>6} {:>7}", "worker",
                     "predictor", "steps", "rmse", "mape%", "changes", "follow", "spikes",
                     "moved%");
  out << (plan ? fmt::format(" {:>12} {:>8}\n", "next", "batch") : "\n");
  std::string previous;
  for (const ReplayRow& row : report.rows) {
    // A blank line between workers.
    if (!previous.empty() && row.node != previous) out << "\n";
    previous = row.node;
    const Score& s = row.score;
    out << fmt::format("{:<10} {:<9} {:>6} {:>12} {:>7} {:>7} {:>6} {:>6} {:>7}", row.node,
                       row.predictor, s.steps, Cell(s.Rmse(), 1), Cell(s.MapePercent(), 2),
                       s.changes, Cell(s.MeanFollowSteps(), 1), s.spikes,
                       Cell(s.SpikeMovedPercent(), 1));
    if (plan) out << fmt::format(" {:>12} {:>8}", Cell(row.next_speed, 1), row.batch);
    out << "\n";
  }
}

}  // namespace dmlps::predict
