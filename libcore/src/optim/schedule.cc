#include "dmlps/optim/schedule.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numbers>

namespace dmlps::optim {
namespace {

// The most steps a schedule may name: beyond any run, small enough that
// no arithmetic on them overflows.
constexpr int64_t kMaxScheduleSteps = int64_t{1} << 40;

std::vector<std::string_view> Split(std::string_view text, char at) {
  std::vector<std::string_view> parts;
  size_t begin = 0;
  while (true) {
    const size_t end = text.find(at, begin);
    parts.push_back(text.substr(begin, end - begin));
    if (end == std::string_view::npos) return parts;
    begin = end + 1;
  }
}

Result<int64_t> Steps(std::string_view text, std::string_view what) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 1 ||
      value > kMaxScheduleSteps) {
    return Status::InvalidArgument(fmt::format("{} '{}' is not a whole number of steps in [1, {}]",
                                               what, text, kMaxScheduleSteps));
  }
  return value;
}

Result<double> Fraction(std::string_view text, std::string_view what, bool may_be_zero) {
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value) ||
      value < 0 || value > 1 || (!may_be_zero && value == 0)) {
    return Status::InvalidArgument(
        fmt::format("{} '{}' is not a number in {}1]", what, text, may_be_zero ? "[0, " : "(0, "));
  }
  return value;
}

Status Usage(std::string_view spec) {
  return Status::InvalidArgument(
      fmt::format("learning-rate schedule '{}': expected constant, step:S:G, "
                  "multistep:M1,M2,...:G, cosine:T[:F] or linear:T[:F]",
                  spec));
}

}  // namespace

double Schedule::Factor(int64_t step) const {
  if (step < warmup) return static_cast<double>(step + 1) / static_cast<double>(warmup);
  const int64_t t = step - warmup;
  switch (kind) {
    case Kind::kConstant:
      return 1;
    case Kind::kStep:
      return std::pow(gamma, static_cast<double>(t / every));
    case Kind::kMultiStep: {
      const auto passed =
          std::upper_bound(milestones.begin(), milestones.end(), t) - milestones.begin();
      return std::pow(gamma, static_cast<double>(passed));
    }
    case Kind::kCosine: {
      const double progress =
          static_cast<double>(std::min(t, length)) / static_cast<double>(length);
      return floor + (1 - floor) * (1 + std::cos(std::numbers::pi * progress)) / 2;
    }
    case Kind::kLinear:
      return 1 +
             (floor - 1) * static_cast<double>(std::min(t, length)) / static_cast<double>(length);
  }
  return 1;
}

std::string Schedule::Spec() const {
  switch (kind) {
    case Kind::kConstant:
      return "constant";
    case Kind::kStep:
      return fmt::format("step:{}:{}", every, gamma);
    case Kind::kMultiStep:
      return fmt::format("multistep:{}:{}", fmt::join(milestones, ","), gamma);
    case Kind::kCosine:
      return fmt::format("cosine:{}:{}", length, floor);
    case Kind::kLinear:
      return fmt::format("linear:{}:{}", length, floor);
  }
  return "constant";
}

Result<Schedule> ParseSchedule(std::string_view spec, int64_t warmup) {
  Schedule schedule;
  if (warmup < 0 || warmup > kMaxScheduleSteps) {
    return Status::InvalidArgument(
        fmt::format("--warmup {} is not a number of steps in [0, {}]", warmup, kMaxScheduleSteps));
  }
  schedule.warmup = warmup;
  const std::vector<std::string_view> parts = Split(spec, ':');
  const std::string_view name = parts[0];
  if (name == "constant" && parts.size() == 1) return schedule;
  if (name == "step" && parts.size() == 3) {
    schedule.kind = Schedule::Kind::kStep;
    DMLPS_ASSIGN_OR_RETURN(schedule.every, Steps(parts[1], "step: S"));
    DMLPS_ASSIGN_OR_RETURN(schedule.gamma, Fraction(parts[2], "step: G", false));
    return schedule;
  }
  if (name == "multistep" && parts.size() == 3) {
    schedule.kind = Schedule::Kind::kMultiStep;
    for (std::string_view milestone : Split(parts[1], ',')) {
      DMLPS_ASSIGN_OR_RETURN(int64_t at, Steps(milestone, "multistep: milestone"));
      if (!schedule.milestones.empty() && at <= schedule.milestones.back()) {
        return Status::InvalidArgument(
            fmt::format("multistep: milestones must ascend ('{}')", parts[1]));
      }
      schedule.milestones.push_back(at);
    }
    DMLPS_ASSIGN_OR_RETURN(schedule.gamma, Fraction(parts[2], "multistep: G", false));
    return schedule;
  }
  if ((name == "cosine" || name == "linear") && (parts.size() == 2 || parts.size() == 3)) {
    schedule.kind = name == "cosine" ? Schedule::Kind::kCosine : Schedule::Kind::kLinear;
    DMLPS_ASSIGN_OR_RETURN(schedule.length, Steps(parts[1], fmt::format("{}: T", name)));
    if (parts.size() == 3) {
      DMLPS_ASSIGN_OR_RETURN(schedule.floor, Fraction(parts[2], fmt::format("{}: F", name), true));
    }
    return schedule;
  }
  return Usage(spec);
}

}  // namespace dmlps::optim
