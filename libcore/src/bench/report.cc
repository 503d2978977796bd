#include "dmlps/bench/report.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>

#include "dmlps/base/json.h"
#include "dmlps/base/output_format.h"

namespace dmlps::bench {
namespace {

// "median (min-max)", or just the median when all runs agree or one ran.
std::string WithRange(const Spread& s, int digits) {
  if (s.count == 0) return "-";
  if (s.count == 1 || s.min == s.max) return Fixed(s.median, digits);
  return Fixed(s.median, digits) + " (" + Fixed(s.min, digits) + "-" + Fixed(s.max, digits) + ")";
}

std::string Median(const Spread& s, int digits) {
  return s.count == 0 ? "-" : Fixed(s.median, digits);
}

Spread Scaled(Spread s, double factor) {
  s.median *= factor;
  s.min *= factor;
  s.max *= factor;
  return s;
}

std::string JsonSpread(const Spread& s) {
  if (s.count == 0) return "null";
  return "{\"median\":" + JsonNumber(s.median) + ",\"min\":" + JsonNumber(s.min) +
         ",\"max\":" + JsonNumber(s.max) + ",\"runs\":" + std::to_string(s.count) + "}";
}

// Whether the rows compare codecs: some row compresses (WriteRows).
bool ShowCodecs(const std::vector<PolicyRow>& rows) {
  return std::any_of(rows.begin(), rows.end(),
                     [](const PolicyRow& row) { return row.codecs != kDenseCodecs; });
}

void WriteTable(const std::vector<PolicyRow>& rows, std::string_view title, std::ostream& out) {
  std::vector<std::string> header = {"policy",  "reached",      "seconds to target", "iterations",
                                     "samples", "compute mean", "compute min",       "waiting",
                                     "wasted",  "MB/worker",    "accuracy",          "speedup"};
  const bool codecs = ShowCodecs(rows);
  if (codecs) header.insert(header.begin() + 1, "codecs");
  std::vector<std::vector<std::string>> cells;
  for (const PolicyRow& row : rows) {
    cells.push_back({row.policy, std::to_string(row.reached) + "/" + std::to_string(row.runs),
                     WithRange(row.seconds, 2), Median(row.iterations, 0), Median(row.samples, 0),
                     Median(row.compute_ratio_mean, 3), Median(row.compute_ratio_min, 3),
                     Median(row.wait_share, 3), Median(row.wasted_samples, 0),
                     Median(Scaled(row.bytes_per_worker, 1e-6), 1), Median(row.accuracy, 4),
                     row.speedup ? Fixed(*row.speedup, 2) + "x" : std::string("-")});
    if (codecs) cells.back().insert(cells.back().begin() + 1, row.codecs);
  }
  if (!title.empty()) out << title << '\n';
  WriteAligned(header, cells, codecs ? 2 : 1, out);
}

void WriteTsv(const std::vector<PolicyRow>& rows, std::ostream& out) {
  const bool codecs = ShowCodecs(rows);
  out << (codecs ? "policy\tcodecs" : "policy")
      << "\truns\treached\tseconds_median\tseconds_min\tseconds_max\titerations\tsamples"
         "\tcompute_ratio_mean\tcompute_ratio_min\twait_share\twasted_samples\taccuracy\tspeedup"
         "\tbytes_per_worker\n";
  auto value = [](const Spread& s, double v) {
    return s.count == 0 ? std::string("-") : fmt::format("{}", v);
  };
  for (const PolicyRow& row : rows) {
    out << row.policy << (codecs ? "\t" + row.codecs : std::string()) << '\t' << row.runs << '\t'
        << row.reached << '\t' << value(row.seconds, row.seconds.median) << '\t'
        << value(row.seconds, row.seconds.min) << '\t' << value(row.seconds, row.seconds.max)
        << '\t' << value(row.iterations, row.iterations.median) << '\t'
        << value(row.samples, row.samples.median) << '\t'
        << value(row.compute_ratio_mean, row.compute_ratio_mean.median) << '\t'
        << value(row.compute_ratio_min, row.compute_ratio_min.median) << '\t'
        << value(row.wait_share, row.wait_share.median) << '\t'
        << value(row.wasted_samples, row.wasted_samples.median) << '\t'
        << value(row.accuracy, row.accuracy.median) << '\t'
        << (row.speedup ? fmt::format("{}", *row.speedup) : std::string("-")) << '\t'
        << value(row.bytes_per_worker, row.bytes_per_worker.median) << '\n';
  }
}

void WriteJson(const std::vector<PolicyRow>& rows, const std::vector<RunResult>& runs,
               std::string_view title, std::ostream& out) {
  const bool codecs = ShowCodecs(rows);
  out << "{\"title\":";
  WriteJsonString(title, out);
  out << ",\"policies\":[";
  for (size_t i = 0; i < rows.size(); ++i) {
    const PolicyRow& row = rows[i];
    out << (i ? "," : "") << "{\"policy\":";
    WriteJsonString(row.policy, out);
    if (codecs) {
      out << ",\"codecs\":";
      WriteJsonString(row.codecs, out);
    }
    out << ",\"runs\":" << row.runs << ",\"reached\":" << row.reached
        << ",\"seconds_to_target\":" << JsonSpread(row.seconds)
        << ",\"iterations\":" << JsonSpread(row.iterations)
        << ",\"samples\":" << JsonSpread(row.samples)
        << ",\"compute_ratio_mean\":" << JsonSpread(row.compute_ratio_mean)
        << ",\"compute_ratio_min\":" << JsonSpread(row.compute_ratio_min)
        << ",\"wait_share\":" << JsonSpread(row.wait_share)
        << ",\"wasted_samples\":" << JsonSpread(row.wasted_samples)
        << ",\"bytes_per_worker\":" << JsonSpread(row.bytes_per_worker)
        << ",\"accuracy\":" << JsonSpread(row.accuracy)
        << ",\"speedup\":" << (row.speedup ? JsonNumber(*row.speedup) : "null") << "}";
  }
  out << "],\"runs\":[";
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunResult& r = runs[i];
    out << (i ? "," : "") << "{\"policy\":";
    WriteJsonString(r.policy, out);
    if (codecs) {
      out << ",\"codecs\":";
      WriteJsonString(r.codecs, out);
    }
    out << ",\"repeat\":" << r.repeat << ",\"reached\":" << (r.reached ? "true" : "false")
        << ",\"seconds\":" << JsonNumber(r.seconds) << ",\"iterations\":" << r.iterations
        << ",\"samples\":" << r.samples
        << ",\"compute_ratio_mean\":" << JsonNumber(r.compute_ratio_mean)
        << ",\"compute_ratio_min\":" << JsonNumber(r.compute_ratio_min)
        << ",\"wait_share\":" << JsonNumber(r.wait_share)
        << ",\"wasted_samples\":" << r.wasted_samples
        << ",\"bytes_per_worker\":" << JsonNumber(r.bytes_per_worker)
        << ",\"accuracy\":" << JsonNumber(r.accuracy) << ",\"failure\":";
    WriteJsonStringOrNull(r.failure, out);
    out << ",\"ran_under\":[";
    for (size_t s = 0; s < r.ran_under.size(); ++s) {
      out << (s ? "," : "") << "{\"policy\":";
      WriteJsonString(r.ran_under[s].policy, out);
      out << ",\"iterations\":" << r.ran_under[s].iterations << "}";
    }
    out << "]}";
  }
  out << "]}\n";
}

}  // namespace

void WriteAligned(const std::vector<std::string>& header,
                  const std::vector<std::vector<std::string>>& cells, size_t left,
                  std::ostream& out) {
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& line : cells) width[c] = std::max(width[c], line[c].size());
  }
  auto write_line = [&](const std::vector<std::string>& line) {
    std::string text;
    for (size_t c = 0; c < line.size(); ++c) {
      const size_t pad = width[c] - line[c].size();
      if (c < left) {
        if (c > 0) text += "  ";
        text += line[c];
        text.append(pad, ' ');
      } else {
        text.append(pad + 2, ' ');
        text += line[c];
      }
    }
    out << text << '\n';
  };
  write_line(header);
  for (const auto& line : cells) write_line(line);
}

Spread SpreadOf(std::vector<double> values) {
  Spread s;
  s.count = static_cast<int64_t>(values.size());
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.min = values.front();
  s.max = values.back();
  const size_t n = values.size();
  s.median = n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  return s;
}

namespace {

// The row of `policy` under `codecs`, over the runs of both.
PolicyRow RowOf(const std::vector<RunResult>& runs, const std::string& policy,
                const std::string& codecs) {
  PolicyRow row;
  row.policy = policy;
  row.codecs = codecs;
  std::vector<double> seconds, iterations, samples, ratio_mean, ratio_min, wait, wasted, bytes,
      accuracy;
  for (const RunResult& r : runs) {
    if (r.policy != policy || r.codecs != codecs) continue;
    ++row.runs;
    if (!r.failure.empty()) continue;
    if (r.reached) {
      ++row.reached;
      seconds.push_back(r.seconds);
      iterations.push_back(static_cast<double>(r.iterations));
      samples.push_back(static_cast<double>(r.samples));
    }
    ratio_mean.push_back(r.compute_ratio_mean);
    ratio_min.push_back(r.compute_ratio_min);
    wait.push_back(r.wait_share);
    wasted.push_back(static_cast<double>(r.wasted_samples));
    bytes.push_back(r.bytes_per_worker);
    accuracy.push_back(r.accuracy);
  }
  row.seconds = SpreadOf(seconds);
  row.iterations = SpreadOf(iterations);
  row.samples = SpreadOf(samples);
  row.compute_ratio_mean = SpreadOf(ratio_mean);
  row.compute_ratio_min = SpreadOf(ratio_min);
  row.wait_share = SpreadOf(wait);
  row.wasted_samples = SpreadOf(wasted);
  row.bytes_per_worker = SpreadOf(bytes);
  row.accuracy = SpreadOf(accuracy);
  return row;
}

}  // namespace

std::vector<PolicyRow> Tabulate(const std::vector<RunResult>& runs,
                                const std::vector<std::string>& policies,
                                const std::vector<std::string>& codecs) {
  std::vector<PolicyRow> rows;
  for (const std::string& policy : policies) {
    for (const std::string& c : codecs) rows.push_back(RowOf(runs, policy, c));
  }
  if (!rows.empty() && rows.front().seconds.count > 0) {
    const double reference = rows.front().seconds.median;
    for (PolicyRow& row : rows) {
      if (row.seconds.count > 0 && row.seconds.median > 0)
        row.speedup = reference / row.seconds.median;
    }
  }
  return rows;
}

Result<Format> ParseFormat(std::string_view text) { return ParseOutputFormat(text); }

void WriteRows(const std::vector<PolicyRow>& rows, const std::vector<RunResult>& runs,
               std::string_view title, Format format, std::ostream& out) {
  switch (format) {
    case Format::kTable:
      WriteTable(rows, title, out);
      break;
    case Format::kTsv:
      WriteTsv(rows, out);
      break;
    case Format::kJson:
      WriteJson(rows, runs, title, out);
      break;
  }
}

}  // namespace dmlps::bench
