// The forms every dmlps tool prints a report in: one set of names, so that
// --format means the same to each.
#ifndef DMLPS_BASE_OUTPUT_FORMAT_H_
#define DMLPS_BASE_OUTPUT_FORMAT_H_

#include <string>
#include <string_view>

#include "dmlps/base/status.h"

namespace dmlps {

// kTable: aligned columns for a person; kTsv and kJson: for programs.
enum class OutputFormat { kTable, kTsv, kJson };

// Parses "table", "tsv" or "json"; InvalidArgument naming the three otherwise.
Result<OutputFormat> ParseOutputFormat(std::string_view text);

// `value` with `digits` digits after the point, as reports print numbers.
std::string Fixed(double value, int digits);

}  // namespace dmlps

#endif  // DMLPS_BASE_OUTPUT_FORMAT_H_
