#include "server/aggregate.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <string>

namespace dmlps::server {

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
  return Status::InvalidArgument("expected mean, median or trimmed-mean:F, not '" +
                                 std::string(text) + "'");
}

bool AggregatesRounds(std::string_view policy) {
  return policy == "bsp" || policy == "abps" || policy == "lbbsp" || policy == "backup" ||
         policy == "token";
}

float AggregateValues(std::span<float> values, const Aggregation& rule) {
  const size_t n = values.size();
  if (rule.rule == Aggregation::Rule::kMean) {
    return static_cast<float>(std::accumulate(values.begin(), values.end(), 0.0) /
                              static_cast<double>(n));
  }
  std::sort(values.begin(), values.end());
  if (rule.rule == Aggregation::Rule::kMedian) {
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
