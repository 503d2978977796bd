#include "dmlps/cli/values.h"

#include <cmath>
#include <cstdlib>

namespace dmlps::cli {

Result<ShardFlag> ParseShard(std::string_view text) {
  const std::string shard(text);
  const size_t slash = shard.find('/');
  const std::string index = shard.substr(0, slash);
  const std::string count = slash == std::string::npos ? "" : shard.substr(slash + 1);
  char* end_index = nullptr;
  char* end_count = nullptr;
  const long long i = std::strtoll(index.c_str(), &end_index, 10);
  const long long n = std::strtoll(count.c_str(), &end_count, 10);
  if (index.empty() || count.empty() || *end_index != '\0' || *end_count != '\0') {
    return Status::InvalidArgument("'" + shard + "' is not I/S (e.g. 1/3)");
  }
  return ShardFlag{i, n};
}

Result<CheckpointEvery> ParseCheckpointEvery(std::string_view text) {
  const std::string every(text);
  const bool seconds = !every.empty() && every.back() == 's';
  const std::string number = seconds ? every.substr(0, every.size() - 1) : every;
  char* end = nullptr;
  const double value = number.empty() ? -1 : std::strtod(number.c_str(), &end);
  if (end == nullptr || *end != '\0' || !(value > 0) || !std::isfinite(value) ||
      (!seconds && (value != std::floor(value) || value > 1e12))) {
    return Status::InvalidArgument(
        "'" + every + "' is neither a positive whole number of iterations nor seconds like 30s");
  }
  CheckpointEvery result;
  if (seconds) {
    result.seconds = value;
  } else {
    result.iterations = static_cast<int64_t>(value);
  }
  return result;
}

std::vector<std::string> SplitList(std::string_view text, char separator) {
  std::vector<std::string> items;
  if (text.empty()) return items;
  size_t start = 0;
  while (true) {
    const size_t at = text.find(separator, start);
    items.emplace_back(text.substr(start, at == std::string_view::npos ? at : at - start));
    if (at == std::string_view::npos) break;
    start = at + 1;
  }
  return items;
}

std::string FormatArimaOrder(int64_t p, int64_t d, int64_t q) {
  return std::to_string(p) + "," + std::to_string(d) + "," + std::to_string(q);
}

}  // namespace dmlps::cli
