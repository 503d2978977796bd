// Flag values made of parts (--shard I/S, --checkpoint-every N|Ts, lists),
// parsed apart from the flags so that each spelling can be tested. The
// InvalidArgument messages name the value, not the flag: the caller puts
// "--flag: " before them.
#ifndef DMLPS_CLI_VALUES_H_
#define DMLPS_CLI_VALUES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/base/status.h"

namespace dmlps::cli {

// --shard I/S: slice I of S.
struct ShardFlag {
  int64_t index = 0;
  int64_t count = 1;
};
// Parses "I/S", two integers (strtoll's spelling). Whether 0 <= I < S holds
// is server::ValidateConfig's to say, with the other limits.
Result<ShardFlag> ParseShard(std::string_view text);

// --checkpoint-every: every N iterations, or every T seconds ("30s").
// Exactly one of the two is set (above 0).
struct CheckpointEvery {
  int64_t iterations = 0;
  double seconds = 0;
};
// Parses "N" (a positive whole number, at most 1e12) or "Ts" (a positive
// finite number of seconds).
Result<CheckpointEvery> ParseCheckpointEvery(std::string_view text);

// Splits at `separator`, keeping empty items, a trailing one too ("a," is
// "a" and ""); "" is no item at all.
std::vector<std::string> SplitList(std::string_view text, char separator = ',');

// "P,D,Q", as predict::ParseArimaOrder reads it back: the default that
// --arima-order shows.
std::string FormatArimaOrder(int64_t p, int64_t d, int64_t q);

}  // namespace dmlps::cli

#endif  // DMLPS_CLI_VALUES_H_
