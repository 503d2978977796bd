#include "dmlps/trace/tools.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "dmlps/base/json.h"
#include "trace/records.h"

namespace dmlps::trace {
namespace {

constexpr double kMicros = 1e6;

// Counts from a trace's arguments are doubles of any value: NaN counts as
// 0, and the rest are clamped to what a run could count, so that casting
// them cannot overflow.
constexpr double kMaxCount = 1e15;
int64_t Count(double v) {
  if (!(v == v)) return 0;  // NaN
  return static_cast<int64_t>(std::clamp(v, -kMaxCount, kMaxCount));
}

// The workers of a summary, found by what server records call them: the
// node's name, or its rank (a number, or a string of one).
class WorkerIndex {
 public:
  explicit WorkerIndex(const std::vector<std::string>& workers) {
    for (size_t i = 0; i < workers.size(); ++i) {
      by_node_.emplace(workers[i], i);
      const int64_t rank = WorkerRank(workers[i]);
      if (rank >= 0) by_rank_.emplace(rank, i);
    }
  }
  // The worker the record's "worker" argument names, or -1.
  int64_t Named(const Record& r) const {
    for (const auto& [k, v] : r.args) {
      if (k != "worker") continue;
      if (const auto* i = std::get_if<int64_t>(&v)) return ByRank(*i);
      if (const auto* d = std::get_if<double>(&v)) {
        return *d == std::floor(*d) ? ByRank(Count(*d)) : -1;
      }
      const auto& s = std::get<std::string>(v);
      if (auto it = by_node_.find(s); it != by_node_.end()) return static_cast<int64_t>(it->second);
      int64_t rank = -1;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), rank);
      return ec == std::errc() && end == s.data() + s.size() ? ByRank(rank) : -1;
    }
    return -1;
  }
  // The worker of a node, or -1.
  int64_t Node(const std::string& node) const {
    auto it = by_node_.find(node);
    return it == by_node_.end() ? -1 : static_cast<int64_t>(it->second);
  }

 private:
  int64_t ByRank(int64_t rank) const {
    auto it = by_rank_.find(rank);
    return it == by_rank_.end() ? -1 : static_cast<int64_t>(it->second);
  }
  std::unordered_map<std::string, size_t> by_node_;
  std::unordered_map<int64_t, size_t> by_rank_;
};

std::string Join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += separator;
    out += parts[i];
  }
  return out;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A server's run: its records from a run/start instant to the next.
struct Run {
  std::string node;
  const Record* start = nullptr;  // null when the trace lacks the start
  std::vector<const Record*> records;
  int64_t StartMicros() const {
    if (start != nullptr) return start->time_us;
    return records.empty() ? 0 : records.front()->time_us;
  }
};

std::vector<Run> SplitRuns(const std::vector<Record>& records) {
  std::vector<const Record*> sorted;
  for (const Record& r : records) {
    if (IsServer(r)) sorted.push_back(&r);
  }
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const Record* a, const Record* b) { return a->time_us < b->time_us; });
  std::vector<Run> runs;
  std::map<std::string, size_t> current;  // node -> index of its open run
  for (const Record* r : sorted) {
    auto it = current.find(r->node);
    if (IsInstant(*r, "run", "start") || it == current.end()) {
      Run run;
      run.node = r->node;
      if (IsInstant(*r, "run", "start")) run.start = r;
      runs.push_back(std::move(run));
      current[r->node] = runs.size() - 1;
      it = current.find(r->node);
    }
    runs[it->second].records.push_back(r);
  }
  return runs;
}

RunSummary SummarizeRun(const Run& run) {
  RunSummary s;
  s.node = run.node;
  s.start_us = run.StartMicros();
  if (run.start != nullptr) {
    s.policy = run.start->Text("policy");
    s.workers = Count(run.start->Number("workers"));
    s.target = run.start->Number("target");
  }
  for (const Record* r : run.records) {
    if (r->kind == "counter" && r->name == "accuracy") {
      const double a = r->Number("value");
      if (!s.has_accuracy || a > s.best_accuracy) s.best_accuracy = a;
      s.has_accuracy = true;
    } else if (IsInstant(*r, "run", "policy decision")) {
      s.decisions.push_back({static_cast<double>(r->time_us - s.start_us) / 1e6,
                             Count(r->Number("iteration")), r->Text("running"), r->Text("chosen"),
                             r->Text("reason"), r->Text("measured"), r->Text("predicted"),
                             r->Number("decide_ms")});
    } else if (IsInstant(*r, "run", "target") && !s.reached) {
      s.reached = true;
      s.time_to_accuracy_s = r->Number("seconds");
      s.target_iteration = Count(r->Number("iteration"));
    }
  }
  return s;
}

// Text for a TSV cell: tabs and line breaks would break the row.
std::string TsvCell(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

std::string ArgText(const ArgValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v)) return fmt::format("{}", *d);
  return std::get<std::string>(v);
}

// A gnuplot string literal: double quotes, with what would end it escaped.
std::string GnuplotString(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += ' ';
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string Terminal(const std::string& term) {
  if (term == "svg") return "set terminal svg size 1000,560 dynamic background rgb 'white'";
  if (term == "png") return "set terminal pngcairo size 1000,560";
  return "set terminal dumb size 120,36";
}

// The name a data block may take: $ then letters, digits and underscores.
std::string BlockName(std::string_view stem, size_t index) {
  std::string name = "$";
  for (const char c : stem) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name + "_" + std::to_string(index);
}

void WriteBlock(const std::string& name, const std::vector<std::string>& lines, std::ostream& out) {
  out << name << " << EOD\n";
  for (const std::string& line : lines) out << line << '\n';
  out << "EOD\n";
}

Status PlotTimeToAccuracy(const std::vector<Record>& records, std::ostream& out) {
  const std::vector<Run> runs = SplitRuns(records);
  std::set<std::string> policies;
  for (const Run& run : runs) {
    if (run.start != nullptr) policies.insert(run.start->Text("policy"));
  }
  // Label by policy when that tells the runs apart, else by node and number.
  const bool by_policy = policies.size() == runs.size() && !policies.count("");
  std::vector<std::string> plots;
  size_t index = 0;
  for (const Run& run : runs) {
    std::vector<std::string> lines;
    for (const Record* r : run.records) {
      if (r->kind == "counter" && r->name == "accuracy") {
        lines.push_back(fmt::format("{:.6f} {}", (r->time_us - run.StartMicros()) / kMicros,
                                    r->Number("value")));
      }
    }
    ++index;
    if (lines.empty()) continue;
    const std::string block = BlockName("run", index);
    WriteBlock(block, lines, out);
    std::string title = by_policy         ? run.start->Text("policy")
                        : runs.size() > 1 ? fmt::format("{} run {}", run.node, index)
                                          : run.node;
    if (!by_policy && run.start != nullptr && !run.start->Text("policy").empty()) {
      title += " (" + run.start->Text("policy") + ")";
    }
    plots.push_back(
        fmt::format("{} using 1:2 with linespoints title {}", block, GnuplotString(title)));
  }
  if (plots.empty()) return Status::DataLoss("no accuracy counters to plot");
  // Each run's target, once, as a dashed line across the plot.
  std::set<double> targets;
  for (const Run& run : runs) {
    if (run.start != nullptr && run.start->Number("target") > 0) {
      targets.insert(run.start->Number("target"));
    }
  }
  for (const double target : targets) {
    plots.push_back(fmt::format(
        "{} with lines dashtype 2 linewidth 2 linecolor rgb \"#d62728\" title \"target {}\"",
        target, target));
  }
  out << "set title \"Time to accuracy\"\n"
         "set xlabel \"seconds since the run's start\"\n"
         "set ylabel \"test accuracy\"\n"
         "set key bottom right\n"
         "set grid\n";
  out << "plot " << Join(plots, ", \\\n     ") << '\n';
  return Status::Ok();
}

Status PlotGantt(const std::vector<Record>& records, double window_s, std::ostream& out) {
  const std::vector<std::string> workers = SortedNodes(records, /*workers_only=*/true);
  if (workers.empty()) return Status::DataLoss("no worker records to plot");
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const Record& r : records) {
    if (IsWorker(r)) origin = std::min(origin, r.time_us);
  }
  const int64_t end = origin + static_cast<int64_t>(window_s * kMicros);
  struct Category {
    const char* title;
    const char* color;
    double band;  // offset from the worker's row
    std::vector<std::string> lines;
  };
  // Each category in a band of its own within the worker's row, in hues
  // that differ in lightness too: short steps make boxes narrower than a
  // pixel, and overlapping there they would hide one another.
  Category categories[] = {{"compute", "#1f77b4", 0.2, {}},
                           {"straggle", "#d62728", 0.2, {}},
                           {"comm", "#ff7f0e", 0.0, {}},
                           {"wait", "#404040", -0.2, {}}};
  std::map<std::string, size_t> row;
  for (size_t i = 0; i < workers.size(); ++i) row[workers[i]] = i;
  int64_t last = origin;  // where the last span shown ends
  bool cut = false;       // a span goes on past the window
  for (const Record& r : records) {
    if (IsWorker(r) && r.kind == "span" && r.time_us + r.dur_us > end) cut = true;
    if (!IsWorker(r) || r.kind != "span" || r.time_us >= end) continue;
    Category* c = IsSpan(r, "compute", "straggle") ? &categories[1]
                  : IsSpan(r, "compute")           ? &categories[0]
                  : IsSpan(r, "comm")              ? &categories[2]
                  : IsSpan(r, "wait")              ? &categories[3]
                                                   : nullptr;
    if (c == nullptr) continue;
    const double x0 = (r.time_us - origin) / kMicros;
    const int64_t stop = std::min(r.time_us + r.dur_us, end);
    last = std::max(last, stop);
    const double x1 = (stop - origin) / kMicros;
    c->lines.push_back(
        fmt::format("{:.6f} {:.6f} {}", x0, x1, static_cast<double>(row[r.node]) + c->band));
  }
  std::vector<std::string> plots;
  for (const Category& c : categories) {
    if (c.lines.empty()) continue;
    const std::string block = BlockName(c.title, 0);
    WriteBlock(block, c.lines, out);
    plots.push_back(
        fmt::format("{} using (($1+$2)/2):3:(($2-$1)/2):(0.09) with boxxyerror fillstyle solid 1.0 "
                    "noborder linecolor rgb \"{}\" title \"{}\"",
                    block, c.color, c.title));
  }
  if (plots.empty()) return Status::DataLoss("no worker spans to plot");
  std::vector<std::string> tics;
  for (size_t i = 0; i < workers.size(); ++i) {
    tics.push_back(fmt::format("{} {}", GnuplotString(workers[i]), i));
  }
  // The title says what is shown: all of a short run, or the first part.
  const double shown_s = (last - origin) / kMicros;
  const std::string span =
      cut ? fmt::format("first {:.3g} s", window_s) : fmt::format("all {:.3g} s", shown_s);
  out << fmt::format("set title \"What each worker did ({})\"\n", span)
      << "set xlabel \"seconds since the first worker record\"\n"
      << "set ytics (" + Join(tics, ", ") + ")\n"
      << fmt::format("set yrange [-0.6:{}]\n", static_cast<double>(workers.size()) - 0.4)
      << "set key outside right top\n"
      << "plot " << Join(plots, ", \\\n     ") << '\n';
  return Status::Ok();
}

// Why a batch plot of a run whose batch never changed would show nothing.
std::string FixedBatch(const std::vector<Record>& records, double size) {
  std::string policy;
  for (const Run& run : SplitRuns(records)) {
    if (run.start != nullptr && policy.empty()) policy = run.start->Text("policy");
  }
  return fmt::format(
      "the batch size stayed {} on every worker{}: nothing to plot (--kind batch shows "
      "how lbbsp moves it; try --kind gantt or tta)",
      size, policy.empty() ? "" : " under policy " + policy);
}

Status PlotBatch(const std::vector<Record>& records, std::ostream& out) {
  const std::vector<std::string> workers = SortedNodes(records, /*workers_only=*/true);
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const Record& r : records) origin = std::min(origin, r.time_us);
  std::vector<std::string> plots;
  std::set<double> sizes;  // every batch size any worker had
  for (size_t i = 0; i < workers.size(); ++i) {
    std::vector<std::string> lines;
    for (const Record& r : records) {
      if (r.node == workers[i] && r.kind == "counter" && r.name == "batch") {
        sizes.insert(r.Number("value"));
        lines.push_back(
            fmt::format("{:.6f} {}", (r.time_us - origin) / kMicros, r.Number("value")));
      }
    }
    if (lines.empty()) continue;
    const std::string block = BlockName("batch", i);
    WriteBlock(block, lines, out);
    plots.push_back(
        fmt::format("{} using 1:2 with steps title {}", block, GnuplotString(workers[i])));
  }
  if (plots.empty()) return Status::DataLoss("no batch counters to plot");
  if (sizes.size() == 1) return Status::DataLoss(FixedBatch(records, *sizes.begin()));
  out << "set title \"Batch size per worker\"\n"
         "set xlabel \"seconds since the trace's start\"\n"
         "set ylabel \"samples per step\"\n"
         "set key outside right top\n"
         "set grid\n"
      << "plot " << Join(plots, ", \\\n     ") << '\n';
  return Status::Ok();
}

Status PlotWait(const std::vector<Record>& records, std::ostream& out) {
  const TraceSummary summary = Summarize(records);
  if (summary.workers.empty()) return Status::DataLoss("no worker records to plot");
  std::vector<std::string> lines;
  for (const WorkerSummary& w : summary.workers) {
    lines.push_back(fmt::format("{} {:.3f}", GnuplotString(w.node), 100 * w.Share(w.wait_s)));
  }
  WriteBlock("$wait", lines, out);
  out << "set title \"Share of each worker's time spent waiting for the server\"\n"
         "set ylabel \"waiting (%)\"\n"
         "set yrange [0:100]\n"
         "set boxwidth 0.6\n"
         "set style fill solid 1.0 noborder\n"
         "set grid ytics\n"
         "plot $wait using 0:2:xtic(1) with boxes linecolor rgb \"#a0a0a0\" notitle\n";
  return Status::Ok();
}

// WriteSummary's formats, a function each, and their parts.
void WriteRunJson(const RunSummary& r, std::ostream& out) {
  out << "{\"node\":";
  WriteJsonString(r.node, out);
  out << ",\"policy\":";
  WriteJsonString(r.policy, out);
  out << ",\"workers\":" << r.workers << ",\"target\":" << JsonNumber(r.target)
      << ",\"start_us\":" << r.start_us << ",\"reached\":" << (r.reached ? "true" : "false")
      << ",\"time_to_accuracy_s\":" << (r.reached ? JsonNumber(r.time_to_accuracy_s) : "null")
      << ",\"target_iteration\":" << (r.reached ? std::to_string(r.target_iteration) : "null")
      << ",\"best_accuracy\":" << (r.has_accuracy ? JsonNumber(r.best_accuracy) : "null")
      << ",\"decisions\":[";
  for (size_t i = 0; i < r.decisions.size(); ++i) {
    const PolicyDecision& d = r.decisions[i];
    out << (i ? "," : "") << "{\"seconds\":" << JsonNumber(d.seconds)
        << ",\"iteration\":" << d.iteration << ",\"running\":";
    WriteJsonString(d.running, out);
    out << ",\"chosen\":";
    WriteJsonString(d.chosen, out);
    out << ",\"reason\":";
    WriteJsonString(d.reason, out);
    out << ",\"measured\":";
    WriteJsonString(d.measured, out);
    out << ",\"predicted\":";
    WriteJsonString(d.predicted, out);
    out << ",\"decide_ms\":" << JsonNumber(d.decide_ms) << "}";
  }
  out << "]}";
}

void WriteWorkerJson(const WorkerSummary& w, std::ostream& out) {
  out << "{\"node\":";
  WriteJsonString(w.node, out);
  out << ",\"steps\":" << w.steps << ",\"samples\":" << w.samples
      << ",\"compute_s\":" << JsonNumber(w.compute_s)
      << ",\"straggle_s\":" << JsonNumber(w.straggle_s) << ",\"comm_s\":" << JsonNumber(w.comm_s)
      << ",\"wait_s\":" << JsonNumber(w.wait_s) << ",\"active_s\":" << JsonNumber(w.active_s)
      << ",\"compute_share\":" << JsonNumber(w.Share(w.compute_s))
      << ",\"straggle_share\":" << JsonNumber(w.Share(w.straggle_s))
      << ",\"comm_share\":" << JsonNumber(w.Share(w.comm_s))
      << ",\"wait_share\":" << JsonNumber(w.Share(w.wait_s))
      << ",\"mean_batch\":" << JsonNumber(w.mean_batch) << ",\"pushes\":" << w.pushes
      << ",\"mean_staleness\":" << (w.pushes ? JsonNumber(w.mean_staleness) : "null")
      << ",\"median_step_s\":" << JsonNumber(w.median_step_s) << ",\"slow_steps\":" << w.slow_steps
      << ",\"timed_steps\":" << w.timed_steps << ",\"straggler\":";
  WriteJsonStringOrNull(w.straggler, out);
  out << "}";
}

void WriteSummaryJson(const TraceSummary& summary, std::ostream& out) {
  out << "{\"runs\":[";
  for (size_t i = 0; i < summary.runs.size(); ++i) {
    out << (i ? "," : "");
    WriteRunJson(summary.runs[i], out);
  }
  out << "],\"median_step_s\":" << JsonNumber(summary.median_step_s) << ",\"workers\":[";
  for (size_t i = 0; i < summary.workers.size(); ++i) {
    out << (i ? "," : "");
    WriteWorkerJson(summary.workers[i], out);
  }
  out << "]}\n";
}

void WriteSummaryTsv(const TraceSummary& summary, std::ostream& out) {
  out << "node\tsteps\tsamples\tmean_batch\tcompute_s\tstraggle_s\tcomm_s\twait_s\tactive_s\t"
         "compute_share\tstraggle_share\tcomm_share\twait_share\tmean_staleness\t"
         "median_step_s\tslow_steps\tstraggler\n";
  for (const WorkerSummary& w : summary.workers) {
    out << fmt::format(
        "{}\t{}\t{}\t{:.3f}\t{:.6f}\t{:.6f}\t{:.6f}\t{:.6f}\t{:.6f}\t{:.4f}\t{:.4f}\t{:.4f}\t"
        "{:.4f}\t{}\t{:.6f}\t{}\t{}\n",
        TsvCell(w.node), w.steps, w.samples, w.mean_batch, w.compute_s, w.straggle_s, w.comm_s,
        w.wait_s, w.active_s, w.Share(w.compute_s), w.Share(w.straggle_s), w.Share(w.comm_s),
        w.Share(w.wait_s), w.pushes ? fmt::format("{:.3f}", w.mean_staleness) : "-",
        w.median_step_s, w.slow_steps, w.straggler.empty() ? "-" : w.straggler);
  }
}

// "run NODE (policy P, N workers, target T): OUTCOME", a line.
void WriteRunLine(const RunSummary& r, std::ostream& out) {
  std::string what = r.policy.empty() ? "policy unknown" : "policy " + r.policy;
  if (r.workers > 0) what += fmt::format(", {} workers", r.workers);
  if (r.target > 0) what += fmt::format(", target {}", r.target);
  std::string outcome;
  if (r.reached) {
    outcome = fmt::format("time to accuracy {:.3f} s (iteration {})", r.time_to_accuracy_s,
                          r.target_iteration);
  } else if (r.has_accuracy) {
    outcome = fmt::format("target not reached; best accuracy {:.4f}", r.best_accuracy);
  } else {
    outcome = "target not reached; no accuracy recorded";
  }
  out << fmt::format("run {} ({}): {}\n", r.node, what, outcome);
  for (const PolicyDecision& d : r.decisions) {
    out << fmt::format(
        "  decision at {:.3f} s, iteration {}: {} -> {} ({}); measured: {}; predicted s/iteration: "
        "{}; took {:.2f} ms\n",
        d.seconds, d.iteration, d.running, d.chosen, d.reason, d.measured, d.predicted,
        d.decide_ms);
  }
}

// Two header lines (names, then units), then a row per worker.
void WriteWorkerTable(const std::vector<WorkerSummary>& workers, std::ostream& out) {
  out << fmt::format(
      "{:<10} {:>6} {:>8} {:>6} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} "
      "{:>9} {:>9}\n",
      "worker", "steps", "samples", "batch", "compute", "straggle", "comm", "wait", "compute",
      "straggle", "comm", "wait", "staleness", "step");
  out << fmt::format(
      "{:<10} {:>6} {:>8} {:>6} {:>9} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} "
      "{:>9} {:>9}\n",
      "", "", "", "", "s", "s", "s", "s", "%", "%", "%", "%", "mean", "median ms");
  for (const WorkerSummary& w : workers) {
    out << fmt::format(
        "{:<10} {:>6} {:>8} {:>6.1f} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>8.1f} {:>8.1f} "
        "{:>8.1f} {:>8.1f} {:>9} {:>9.1f}\n",
        w.node, w.steps, w.samples, w.mean_batch, w.compute_s, w.straggle_s, w.comm_s, w.wait_s,
        100 * w.Share(w.compute_s), 100 * w.Share(w.straggle_s), 100 * w.Share(w.comm_s),
        100 * w.Share(w.wait_s), w.pushes ? fmt::format("{:.2f}", w.mean_staleness) : "-",
        1000 * w.median_step_s);
  }
}

// A line per straggler, or one saying there is none.
void WriteStragglers(const TraceSummary& summary, std::ostream& out) {
  bool any = false;
  for (const WorkerSummary& w : summary.workers) {
    if (w.straggler.empty()) continue;
    any = true;
    out << fmt::format(
        "straggler: {} {}: median step time {:.1f} ms, {:.2f}x the workers' median {:.1f} "
        "ms; {} of {} steps over {}x\n",
        w.node, w.straggler, 1000 * w.median_step_s, w.median_step_s / summary.median_step_s,
        1000 * summary.median_step_s, w.slow_steps, w.timed_steps, kStragglerFactor);
  }
  if (!any) {
    out << fmt::format("stragglers: none (no step time over {}x the workers' median {:.1f} ms)\n",
                       kStragglerFactor, 1000 * summary.median_step_s);
  }
}

void WriteSummaryText(const TraceSummary& summary, std::ostream& out) {
  for (const RunSummary& r : summary.runs) WriteRunLine(r, out);
  if (summary.workers.empty()) {
    out << "no worker records\n";
    return;
  }
  if (!summary.runs.empty()) out << '\n';
  WriteWorkerTable(summary.workers, out);
  out << '\n';
  WriteStragglers(summary, out);
}

}  // namespace

void SortByTime(std::vector<Record>* records) {
  std::stable_sort(records->begin(), records->end(),
                   [](const Record& a, const Record& b) { return a.time_us < b.time_us; });
}

Status WriteMerged(std::vector<Record> records, std::ostream& out) {
  SortByTime(&records);
  msgpack::sbuffer buffer;
  Pack(MetaRecord(records.empty() ? 0 : records.front().time_us, "dmlps-trace"), &buffer);
  for (const Record& r : records) {
    Pack(r, &buffer);
    if (buffer.size() >= (1 << 20)) {
      out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
      buffer.clear();
    }
  }
  out.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
  out.flush();
  if (!out) return Status::IOError("cannot write the merged trace");
  return Status::Ok();
}

namespace {

// What the summary adds up of one worker as the records go by.
struct WorkerTally {
  WorkerSummary summary;
  int64_t first = std::numeric_limits<int64_t>::max();
  int64_t last = std::numeric_limits<int64_t>::min();
  // A step's busy time: its compute spans (several for a chunked step) and
  // its emulated slowness, by clock. Intervals between steps would not do:
  // under BSP every worker's steps are a barrier apart.
  std::map<int64_t, double> busy;
  double staleness = 0;

  // A record the worker wrote. (Reading a trace bounds its times, so that
  // the end of a span cannot overflow.)
  void Add(const Record& r) {
    WorkerSummary& w = summary;
    first = std::min(first, r.time_us);
    last = std::max(last, r.time_us + (r.kind == "span" ? r.dur_us : 0));
    if (IsSpan(r, "compute", "step")) {
      ++w.steps;
      // Clamped counts, summed without overflow however many.
      const int64_t samples = std::max<int64_t>(Count(r.Number("samples")), 0);
      w.samples = samples > std::numeric_limits<int64_t>::max() - w.samples
                      ? std::numeric_limits<int64_t>::max()
                      : w.samples + samples;
      w.compute_s += static_cast<double>(r.dur_us) / kMicros;
      busy[Count(r.Number("clock", -1))] += static_cast<double>(r.dur_us) / kMicros;
    } else if (IsSpan(r, "compute", "straggle")) {
      w.straggle_s += static_cast<double>(r.dur_us) / kMicros;
      busy[Count(r.Number("clock", -1))] += static_cast<double>(r.dur_us) / kMicros;
    } else if (IsSpan(r, "comm")) {
      w.comm_s += static_cast<double>(r.dur_us) / kMicros;
    } else if (IsSpan(r, "wait")) {
      w.wait_s += static_cast<double>(r.dur_us) / kMicros;
    }
  }
};

}  // namespace

TraceSummary Summarize(const std::vector<Record>& records) {
  TraceSummary summary;
  for (const Run& run : SplitRuns(records)) summary.runs.push_back(SummarizeRun(run));

  const std::vector<std::string> workers = SortedNodes(records, /*workers_only=*/true);
  std::vector<WorkerTally> tallies(workers.size());
  for (size_t i = 0; i < workers.size(); ++i) tallies[i].summary.node = workers[i];
  // One pass over the records, each found its worker by name or rank: a
  // trace of many workers costs no more per record than one of a few.
  const WorkerIndex index(workers);
  for (const Record& r : records) {
    if (IsWorker(r)) {
      const int64_t i = index.Node(r.node);
      if (i >= 0) tallies[static_cast<size_t>(i)].Add(r);
    } else if (IsServer(r) && IsInstant(r, "comm", "push")) {
      const int64_t i = index.Named(r);
      if (i < 0) continue;
      WorkerTally& t = tallies[static_cast<size_t>(i)];
      ++t.summary.pushes;
      t.staleness += r.Number("staleness");
    }
  }
  std::vector<std::vector<double>> step_times(workers.size());
  std::vector<double> medians;
  for (size_t i = 0; i < workers.size(); ++i) {
    WorkerTally& t = tallies[i];
    WorkerSummary& w = t.summary;
    if (t.first <= t.last) w.active_s = static_cast<double>(t.last - t.first) / kMicros;
    if (w.steps > 0) w.mean_batch = static_cast<double>(w.samples) / w.steps;
    if (w.pushes > 0) w.mean_staleness = t.staleness / w.pushes;
    for (const auto& [clock, seconds] : t.busy) step_times[i].push_back(seconds);
    w.timed_steps = static_cast<int64_t>(step_times[i].size());
    w.median_step_s = Median(step_times[i]);
    if (w.timed_steps > 0) medians.push_back(w.median_step_s);
    summary.workers.push_back(std::move(w));
  }
  summary.median_step_s = Median(medians);
  // Stragglers need others to be compared with.
  if (medians.size() >= 2 && summary.median_step_s > 0) {
    const double threshold = kStragglerFactor * summary.median_step_s;
    for (size_t i = 0; i < workers.size(); ++i) {
      WorkerSummary& w = summary.workers[i];
      for (const double d : step_times[i]) w.slow_steps += d > threshold ? 1 : 0;
      // Deterministic: slow most of the time. Transient: slow now and then,
      // more often than the noise every worker sees (1 step in 20).
      if (w.timed_steps > 0 && w.median_step_s > threshold) {
        w.straggler = "deterministic";
      } else if (w.slow_steps * 20 > w.timed_steps) {
        w.straggler = "transient";
      }
    }
  }
  return summary;
}

Result<SummaryFormat> ParseSummaryFormat(std::string_view text) {
  if (text == "text") return SummaryFormat::kText;
  if (text == "tsv") return SummaryFormat::kTsv;
  if (text == "json") return SummaryFormat::kJson;
  return Status::InvalidArgument("unknown format '" + std::string(text) + "' (text, tsv or json)");
}

void WriteSummary(const TraceSummary& summary, SummaryFormat format, std::ostream& out) {
  if (format == SummaryFormat::kJson) {
    WriteSummaryJson(summary, out);
  } else if (format == SummaryFormat::kTsv) {
    WriteSummaryTsv(summary, out);
  } else {
    WriteSummaryText(summary, out);
  }
}

void WriteTsv(const std::vector<Record>& records, std::ostream& out) {
  out << "t_us\tnode\tlane\tkind\tname\tdur_us\targs\n";
  for (const Record& r : records) {
    std::string args;
    for (const auto& [k, v] : r.args) {
      if (!args.empty()) args += ';';
      args += k + "=" + ArgText(v);
    }
    out << r.time_us << '\t' << TsvCell(r.node) << '\t' << TsvCell(r.lane) << '\t'
        << TsvCell(r.kind) << '\t' << TsvCell(r.name) << '\t' << r.dur_us << '\t' << TsvCell(args)
        << '\n';
  }
}

Status ValidatePlotOptions(const PlotOptions& options) {
  if (options.kind != "tta" && options.kind != "gantt" && options.kind != "batch" &&
      options.kind != "wait") {
    return Status::InvalidArgument("--kind: unknown plot '" + options.kind +
                                   "' (tta, gantt, batch or wait)");
  }
  if (options.term != "svg" && options.term != "png" && options.term != "dumb") {
    return Status::InvalidArgument("--term: unknown terminal '" + options.term +
                                   "' (svg, png or dumb)");
  }
  if (!(options.window_s > 0)) {
    return Status::InvalidArgument("--window: must be more than 0 seconds");
  }
  return Status::Ok();
}

Status WritePlot(const std::vector<Record>& records, const PlotOptions& options,
                 std::ostream& out) {
  DMLPS_RETURN_IF_ERROR(ValidatePlotOptions(options));
  std::ostringstream body;
  Status status;
  if (options.kind == "tta") {
    status = PlotTimeToAccuracy(records, body);
  } else if (options.kind == "gantt") {
    status = PlotGantt(records, options.window_s, body);
  } else if (options.kind == "batch") {
    status = PlotBatch(records, body);
  } else {
    status = PlotWait(records, body);
  }
  if (!status.ok()) return status;
  out << "# gnuplot script written by dmlps-trace plot --kind " << options.kind << "\n"
      << Terminal(options.term) << "\n"
      << body.str();
  out.flush();
  if (!out) return Status::IOError("cannot write the plot script");
  return Status::Ok();
}

}  // namespace dmlps::trace
