#include "dmlps/worker/straggler.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <system_error>

namespace dmlps::worker {
namespace {

using std::chrono::microseconds;

// The shortest text that reads back as `value` ("4", "0.5", "nan").
std::string FormatDouble(double value) {
  char buffer[64];
  const std::to_chars_result r = std::to_chars(buffer, buffer + sizeof(buffer), value);
  if (r.ec != std::errc()) return "?";
  return std::string(buffer, r.ptr);
}

std::string Quote(std::string_view text) {
  // Appended piece by piece: GCC 12 misreads `"\"" + string` (-Wrestrict).
  std::string quoted = "\"";
  quoted += text;
  quoted += '"';
  return quoted;
}

// What a schedule holds besides iterations: slowdown factors (>= 1) or
// bandwidth caps (>= 0).
struct ScheduleKind {
  const char* value;  // "factor" or "cap"
  const char* form;   // "ITERATION:FACTOR"
  double min;
};
constexpr ScheduleKind kSlowdown{"factor", "ITERATION:FACTOR", 1};
constexpr ScheduleKind kBandwidth{"cap", "ITERATION:MBPS", 0};

// What is wrong with one schedule entry given the one before it (index > 0),
// or "" when nothing is. Shared by parsing and validation so both agree.
std::string ScheduleEntryProblem(const std::vector<std::pair<int64_t, double>>& schedule,
                                 size_t index, const ScheduleKind& kind) {
  const auto& [iteration, factor] = schedule[index];
  if (iteration < 0) return "iteration " + std::to_string(iteration) + " is negative";
  if (index > 0 && iteration <= schedule[index - 1].first) {
    return "iteration " + std::to_string(iteration) + " does not come after the previous entry's " +
           std::to_string(schedule[index - 1].first);
  }
  if (!std::isfinite(factor)) {
    return std::string(kind.value) + " " + FormatDouble(factor) + " is not a finite number";
  }
  if (factor < kind.min) {
    return std::string(kind.value) + " " + FormatDouble(factor) + " is below " +
           FormatDouble(kind.min);
  }
  return "";
}

// Whether all of `text` is one int64 (decimal, optional '-', nothing else).
bool ParseWholeInt(std::string_view text, int64_t* value, bool* out_of_range) {
  const char* end = text.data() + text.size();
  const std::from_chars_result r = std::from_chars(text.data(), end, *value);
  *out_of_range = r.ec == std::errc::result_out_of_range;
  return r.ec == std::errc() && r.ptr == end;
}

// Whether all of `text` is one double as std::from_chars reads it.
bool ParseWholeDouble(std::string_view text, double* value) {
  const char* end = text.data() + text.size();
  const std::from_chars_result r = std::from_chars(text.data(), end, *value);
  return r.ec == std::errc() && r.ptr == end;
}

// splitmix64's finalizer: spreads a seed over all 64 bits.
uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Rounds a non-negative count of microseconds; NaN and negatives give 0, and
// anything beyond int64 saturates.
microseconds RoundMicros(double us) {
  if (!(us > 0)) return microseconds(0);
  constexpr double kMax = 9.2e18;  // below INT64_MAX, exactly representable
  if (us >= kMax) return microseconds(static_cast<int64_t>(kMax));
  return microseconds(std::llround(us));
}

Result<std::vector<std::pair<int64_t, double>>> ParseSchedule(std::string_view text,
                                                              const ScheduleKind& kind) {
  if (text.empty()) {
    return Status::InvalidArgument(std::string("the schedule is empty; expected ") + kind.form +
                                   "[,...]");
  }
  std::vector<std::pair<int64_t, double>> schedule;
  size_t number = 0;
  size_t begin = 0;
  while (true) {
    const size_t comma = text.find(',', begin);
    const std::string_view entry = text.substr(
        begin, comma == std::string_view::npos ? std::string_view::npos : comma - begin);
    ++number;
    const std::string where = "entry " + std::to_string(number) + " " + Quote(entry);
    if (entry.empty()) {
      return Status::InvalidArgument("entry " + std::to_string(number) + " is empty; expected " +
                                     kind.form);
    }
    const size_t colon = entry.find(':');
    if (colon == std::string_view::npos) {
      return Status::InvalidArgument(where + ": expected " + kind.form);
    }
    const std::string_view iteration_text = entry.substr(0, colon);
    const std::string_view factor_text = entry.substr(colon + 1);
    int64_t iteration = 0;
    bool out_of_range = false;
    if (!ParseWholeInt(iteration_text, &iteration, &out_of_range)) {
      return Status::InvalidArgument(
          where + ": iteration " + Quote(iteration_text) +
          (out_of_range ? " is out of range" : " is not a whole number"));
    }
    double factor = 0;
    if (!ParseWholeDouble(factor_text, &factor)) {
      return Status::InvalidArgument(where + ": " + kind.value + " " + Quote(factor_text) +
                                     " is not a number");
    }
    schedule.emplace_back(iteration, factor);
    if (std::string problem = ScheduleEntryProblem(schedule, schedule.size() - 1, kind);
        !problem.empty()) {
      return Status::InvalidArgument(where + ": " + problem);
    }
    if (comma == std::string_view::npos) break;
    begin = comma + 1;
  }
  return schedule;
}

// Every problem with a schedule, naming `flag`.
void ValidateSchedule(const std::vector<std::pair<int64_t, double>>& schedule,
                      const ScheduleKind& kind, const char* flag,
                      std::vector<std::string>* problems) {
  for (size_t i = 0; i < schedule.size(); ++i) {
    if (std::string problem = ScheduleEntryProblem(schedule, i, kind); !problem.empty()) {
      problems->push_back(
          std::string(flag) + ": entry " + std::to_string(i + 1) + " " +
          Quote(std::to_string(schedule[i].first) + ":" + FormatDouble(schedule[i].second)) + ": " +
          problem);
    }
  }
}

// The value of the last entry at or before `iteration`, else `before`.
double ScheduledAt(const std::vector<std::pair<int64_t, double>>& schedule, int64_t iteration,
                   double before) {
  const auto after = std::upper_bound(
      schedule.begin(), schedule.end(), iteration,
      [](int64_t it, const std::pair<int64_t, double>& entry) { return it < entry.first; });
  if (after == schedule.begin()) return before;
  return std::prev(after)->second;
}

}  // namespace

Result<std::vector<std::pair<int64_t, double>>> ParseSlowdownSchedule(std::string_view text) {
  return ParseSchedule(text, kSlowdown);
}

Result<std::vector<std::pair<int64_t, double>>> ParseBandwidthSchedule(std::string_view text) {
  return ParseSchedule(text, kBandwidth);
}

std::vector<std::string> ValidateStragglerSpec(const StragglerSpec& spec) {
  std::vector<std::string> problems;
  if (!(spec.slowdown >= 1) || !std::isfinite(spec.slowdown)) {
    problems.push_back("--slowdown must be a number of at least 1");
  }
  ValidateSchedule(spec.schedule, kSlowdown, "--slowdown-schedule", &problems);
  ValidateSchedule(spec.bandwidth_schedule, kBandwidth, "--bandwidth-schedule", &problems);
  if (!(spec.delay_prob >= 0 && spec.delay_prob <= 1)) {
    problems.push_back("--delay-prob must be in [0, 1]");
  }
  if (spec.delay.count() < 0) problems.push_back("--delay-ms must not be negative");
  if (spec.delay_prob > 0 && spec.delay.count() == 0) {
    problems.push_back("--delay-prob needs --delay-ms");
  }
  if (spec.round_robin.count() < 0) problems.push_back("--round-robin-ms must not be negative");
  if (!(spec.bandwidth_mbps >= 0) || !std::isfinite(spec.bandwidth_mbps)) {
    problems.push_back("--bandwidth-mbps must be a finite number of at least 0 (0: no cap)");
  }
  return problems;
}

StragglerProfile::StragglerProfile(StragglerSpec spec, int64_t rank, int64_t num_workers)
    : spec_(std::move(spec)), rank_(rank), num_workers_(num_workers) {}

double StragglerProfile::NextUniform() {
  if (rng_ == nullptr) {
    rng_ =
        std::make_unique<std::mt19937_64>(Mix64(spec_.seed ^ Mix64(static_cast<uint64_t>(rank_))));
  }
  // 53 random bits scaled by 2^-53: exact, in [0, 1), the same everywhere.
  return static_cast<double>((*rng_)() >> 11) * 0x1.0p-53;
}

double StragglerProfile::SlowdownAt(int64_t iteration) const {
  return ScheduledAt(spec_.schedule, iteration, spec_.slowdown);
}

double StragglerProfile::BandwidthAt(int64_t iteration) const {
  return ScheduledAt(spec_.bandwidth_schedule, iteration, spec_.bandwidth_mbps);
}

microseconds StragglerProfile::ExtraDelay(int64_t iteration, microseconds compute) {
  double extra_us = 0;
  const double factor = SlowdownAt(iteration);
  if (factor > 1 && compute.count() > 0) {
    extra_us += (factor - 1) * static_cast<double>(compute.count());
  }
  if (spec_.delay_prob > 0) {
    // Draw every call, even when delay is 0, so the stream never depends on it.
    if (NextUniform() < spec_.delay_prob && spec_.delay.count() > 0) {
      extra_us += static_cast<double>(spec_.delay.count());
    }
  } else if (spec_.delay.count() > 0) {
    extra_us += static_cast<double>(spec_.delay.count());
  }
  if (spec_.round_robin.count() > 0 && num_workers_ >= 1 && rank_ >= 0 && rank_ < num_workers_) {
    const int64_t turn = ((iteration % num_workers_) + num_workers_) % num_workers_;
    if (turn == rank_) extra_us += static_cast<double>(spec_.round_robin.count());
  }
  return RoundMicros(extra_us);
}

microseconds StragglerProfile::TransferTime(int64_t iteration, int64_t bytes) const {
  const double mbps = BandwidthAt(iteration);
  if (!(mbps > 0) || bytes <= 0) return microseconds(0);
  // bytes*8 bits at M*1e6 bits/s is bytes*8/M microseconds.
  return RoundMicros(static_cast<double>(bytes) * 8.0 / mbps);
}

}  // namespace dmlps::worker
