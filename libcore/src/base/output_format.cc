#include "dmlps/base/output_format.h"

#include <spdlog/fmt/fmt.h>

#include <string>

namespace dmlps {

Result<OutputFormat> ParseOutputFormat(std::string_view text) {
  if (text == "table") return OutputFormat::kTable;
  if (text == "tsv") return OutputFormat::kTsv;
  if (text == "json") return OutputFormat::kJson;
  return Status::InvalidArgument("unknown format '" + std::string(text) + "' (table, tsv or json)");
}

std::string Fixed(double value, int digits) { return fmt::format("{:.{}f}", value, digits); }

}  // namespace dmlps
