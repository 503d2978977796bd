#include "server/aggregate.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <string>

#include "dmlps/sync/registry.h"

namespace dmlps::server {

namespace {

// A number of "cclip:" that is all of `text` and finite; nullopt otherwise.
std::optional<double> Number(std::string_view text) {
  const std::string number(text);
  char* end = nullptr;
  const double value = number.empty() ? NAN : std::strtod(number.c_str(), &end);
  if (end == nullptr || *end != '\0' || !std::isfinite(value)) return std::nullopt;
  return value;
}

// "TAU[:ITERS]", what follows "cclip:"; TAU "auto": adaptive.
Result<Aggregation> ParseCenteredClip(std::string_view text) {
  Aggregation out;
  out.rule = Aggregation::Rule::kCenteredClip;
  const size_t colon = text.find(':');
  const std::string_view radius_text = text.substr(0, colon);
  if (radius_text == "auto") {
    out.adaptive = true;
  } else {
    const std::optional<double> radius = Number(radius_text);
    if (!radius || !(*radius > 0)) {
      return Status::InvalidArgument("cclip:TAU needs a clipping radius TAU > 0 or auto, not '" +
                                     std::string(radius_text) + "'");
    }
    out.radius = *radius;
  }
  if (colon != std::string_view::npos) {
    const std::string_view iterations_text = text.substr(colon + 1);
    const std::optional<double> iterations = Number(iterations_text);
    if (!iterations || !(*iterations >= 1 && *iterations <= 100) ||
        *iterations != std::floor(*iterations)) {
      return Status::InvalidArgument(
          "cclip:TAU:ITERS needs a whole number of iterations ITERS in [1, 100], not '" +
          std::string(iterations_text) + "'");
    }
    out.iterations = static_cast<int64_t>(*iterations);
  }
  return out;
}

}  // namespace

Result<Aggregation> ParseAggregation(std::string_view text) {
  Aggregation out;
  if (text == "mean") return out;
  if (text == "median") {
    out.rule = Aggregation::Rule::kMedian;
    return out;
  }
  constexpr std::string_view kTrimmed = "trimmed-mean:";
  if (text.starts_with(kTrimmed)) {
    const std::string number(text.substr(kTrimmed.size()));
    char* end = nullptr;
    const double trim = number.empty() ? -1 : std::strtod(number.c_str(), &end);
    if (end == nullptr || *end != '\0' || !(trim >= 0 && trim < 0.5)) {
      return Status::InvalidArgument("trimmed-mean:F needs a fraction F in [0, 0.5), not '" +
                                     number + "'");
    }
    out.rule = Aggregation::Rule::kTrimmedMean;
    out.trim = trim;
    return out;
  }
  constexpr std::string_view kClip = "cclip:";
  if (text.starts_with(kClip)) return ParseCenteredClip(text.substr(kClip.size()));
  return Status::InvalidArgument("expected mean, median, trimmed-mean:F or cclip:TAU, not '" +
                                 std::string(text) + "'");
}

bool AggregatesRounds(std::string_view policy) {
  const sync::PolicyRow* row = sync::FindPolicyRow(policy);
  return row != nullptr && row->runs.empty() && row->traits.aggregates_rounds;
}

float AggregateValues(std::span<float> values, const Aggregation& rule) {
  const size_t n = values.size();
  if (rule.rule == Aggregation::Rule::kMean) {
    return static_cast<float>(std::accumulate(values.begin(), values.end(), 0.0) /
                              static_cast<double>(n));
  }
  std::sort(values.begin(), values.end());
  if (rule.rule == Aggregation::Rule::kMedian || rule.rule == Aggregation::Rule::kCenteredClip) {
    // Halved first: two finite values near the largest float sum to infinity.
    return n % 2 == 1 ? values[n / 2] : values[n / 2 - 1] / 2 + values[n / 2] / 2;
  }
  // trim < 0.5 leaves at least one value.
  const auto cut = static_cast<size_t>(std::floor(rule.trim * static_cast<double>(n)));
  const auto kept = values.subspan(cut, n - 2 * cut);
  // Summed in double: finite floats cannot overflow it.
  return static_cast<float>(std::accumulate(kept.begin(), kept.end(), 0.0) /
                            static_cast<double>(kept.size()));
}

}  // namespace dmlps::server
