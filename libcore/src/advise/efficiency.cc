// The statistical-efficiency tables: their look-up, and reading them from
// their file.
#include "dmlps/advise/efficiency.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <utility>

#include "dmlps/base/file.h"

namespace dmlps::advise {

std::optional<Efficiency> EfficiencyTable::Find(std::string_view policy) const {
  for (const Efficiency& row : rows) {
    if (row.policy == policy) return row;
  }
  // Else the row of the same policy with another parameter ("ssp:7": ssp:3's).
  const std::string_view name = policy.substr(0, policy.find(':'));
  for (const Efficiency& row : rows) {
    if (std::string_view(row.policy).substr(0, row.policy.find(':')) == name) return row;
  }
  return std::nullopt;
}

double EfficiencyAt(const Efficiency& row, double ratio, double straggler_ratio) {
  if (!(ratio > 1) || !(straggler_ratio > 1) || !(row.even > 0) || !(row.straggler > 0)) {
    return row.even;
  }
  const double t = std::min(1.0, std::log(ratio) / std::log(straggler_ratio));
  return std::exp((1 - t) * std::log(row.even) + t * std::log(row.straggler));
}

double EfficiencyUnder(const Efficiency& row, double ratio, double delay_cost,
                       double straggler_ratio) {
  const double mixed = EfficiencyAt(row, ratio, straggler_ratio);
  if (!(delay_cost > 0) || !(row.delays > 0) || !(mixed > 0)) return mixed;
  const double t = std::min(1.0, std::log1p(delay_cost) / std::log(2.0));
  return std::exp((1 - t) * std::log(mixed) + t * std::log(row.delays));
}

namespace {

std::string_view Kind(std::string_view model) { return model.substr(0, model.find(':')); }

double LogDistance(int64_t a, int64_t b) {
  return std::abs(std::log(static_cast<double>(a) / static_cast<double>(b)));
}

// The first word of *rest (spaces and tabs between words), taken off it.
std::string_view TakeWord(std::string_view* rest) {
  const size_t start = rest->find_first_not_of(" \t");
  if (start == std::string_view::npos) {
    *rest = {};
    return {};
  }
  const size_t end = std::min(rest->find_first_of(" \t", start), rest->size());
  const std::string_view word = rest->substr(start, end - start);
  *rest = rest->substr(end);
  return word;
}

// `word` as a number in [min, max], or nothing.
template <typename T>
std::optional<T> NumberIn(std::string_view word, T min, T max) {
  T value{};
  const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (word.empty() || ec != std::errc() || end != word.data() + word.size() ||
      !(value >= min && value <= max)) {
    return std::nullopt;
  }
  return value;
}

// Reads one line of a table (not "table") into `table`; the problem, or empty.
std::string ReadTableLine(std::string_view keyword, std::string_view rest, EfficiencyTable* table) {
  const size_t text_start = std::min(rest.find_first_not_of(" \t"), rest.size());
  const std::string_view text = rest.substr(text_start);
  if (keyword == "source" || keyword == "command") {
    (keyword == "source" ? table->source : table->command) = std::string(text);
    return {};
  }
  if (keyword == "auto-start") {
    table->auto_start = std::string(TakeWord(&rest));
    return table->auto_start.empty() ? "auto-start needs a policy" : "";
  }
  if (keyword == "straggler-ratio") {
    const std::optional<double> ratio = NumberIn(TakeWord(&rest), 1.0, 1e6);
    if (!ratio || *ratio <= 1) return "straggler-ratio needs a number above 1";
    table->straggler_ratio = *ratio;
    return {};
  }
  if (keyword != "row") return fmt::format("unknown line '{}'", keyword);
  Efficiency row;
  row.policy = std::string(TakeWord(&rest));
  const std::optional<double> even = NumberIn(TakeWord(&rest), 1e-6, 1e6);
  const std::optional<double> straggler = NumberIn(TakeWord(&rest), 1e-6, 1e6);
  const std::optional<double> delays = NumberIn(TakeWord(&rest), 0.0, 1e6);
  if (row.policy.empty() || !even || !straggler || !delays) {
    return "a row is POLICY EVEN STRAGGLER DELAYS [NOTE], the ratios above 0 (DELAYS 0: none)";
  }
  row.even = *even;
  row.straggler = *straggler;
  row.delays = *delays;
  table->rows.push_back(std::move(row));
  return {};
}

}  // namespace

Result<std::vector<EfficiencyTable>> ParseEfficiencies(std::string_view text,
                                                       std::string_view origin) {
  std::vector<EfficiencyTable> tables;
  int64_t number = 0;
  while (!text.empty()) {
    const size_t newline = std::min(text.find('\n'), text.size());
    std::string_view rest = text.substr(0, newline);
    text = text.substr(std::min(newline + 1, text.size()));
    ++number;
    if (!rest.empty() && rest.back() == '\r') rest.remove_suffix(1);
    const std::string_view keyword = TakeWord(&rest);
    if (keyword.empty() || keyword.starts_with('#')) continue;
    std::string problem;
    if (keyword == "table") {
      EfficiencyTable table;
      table.model = std::string(TakeWord(&rest));
      const std::optional<int64_t> batch = NumberIn<int64_t>(TakeWord(&rest), 1, int64_t{1} << 40);
      const std::optional<int64_t> workers =
          NumberIn<int64_t>(TakeWord(&rest), 1, int64_t{1} << 40);
      if (table.model.empty() || !batch || !workers || !TakeWord(&rest).empty()) {
        problem = "a table starts 'table MODEL BATCH WORKERS'";
      } else {
        table.batch = *batch;
        table.workers = *workers;
        tables.push_back(std::move(table));
      }
    } else if (tables.empty()) {
      problem = fmt::format("'{}' before the first 'table' line", keyword);
    } else {
      problem = ReadTableLine(keyword, rest, &tables.back());
    }
    if (!problem.empty())
      return Status::DataLoss(fmt::format("{}:{}: {}", origin, number, problem));
  }
  if (tables.empty()) return Status::DataLoss(fmt::format("{}: no efficiency table", origin));
  for (const EfficiencyTable& t : tables) {
    if (t.rows.empty()) {
      return Status::DataLoss(
          fmt::format("{}: the table of {} {} {} has no row", origin, t.model, t.batch, t.workers));
    }
  }
  return tables;
}

std::vector<std::string> EfficiencyFiles() {
  if (const char* named = std::getenv("DMLPS_EFFICIENCY"); named != nullptr && *named != '\0') {
    return {named};
  }
  std::vector<std::string> files;
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    files.push_back((exe.parent_path() / DMLPS_EFFICIENCY_RELATIVE).lexically_normal().string());
  }
  files.emplace_back(DMLPS_EFFICIENCY_SOURCE);
  return files;
}

Result<std::vector<EfficiencyTable>> LoadEfficiencies() {
  const std::vector<std::string> files = EfficiencyFiles();
  for (const std::string& file : files) {
    std::error_code error;
    if (!std::filesystem::exists(file, error)) continue;
    // The installed tables are a few kilobytes.
    DMLPS_ASSIGN_OR_RETURN(std::string text,
                           ReadSmallFile(file, int64_t{1} << 24, "efficiency tables"));
    return ParseEfficiencies(text, file);
  }
  std::string looked;
  for (const std::string& file : files) looked += (looked.empty() ? "" : ", ") + file;
  return Status::NotFound(
      "no efficiency tables at " + looked +
      " (share/dmlps/efficiency.tsv comes with dmlps; $DMLPS_EFFICIENCY names another file)");
}

EfficiencyTable EfficiencyFor(const std::vector<EfficiencyTable>& tables, std::string_view model,
                              int64_t batch, int64_t workers) {
  const EfficiencyTable* best = nullptr;
  std::pair<double, double> best_distance;
  for (const EfficiencyTable& t : tables) {
    if (Kind(t.model) != Kind(model)) continue;
    // Nearest batch first, then nearest number of workers.
    const std::pair<double, double> distance = {
        batch > 0 ? LogDistance(t.batch, batch) : -static_cast<double>(t.batch),
        workers > 0 ? LogDistance(t.workers, workers) : 0};
    if (best == nullptr || distance < best_distance) {
      best = &t;
      best_distance = distance;
    }
  }
  return best != nullptr ? *best : tables.front();
}

}  // namespace dmlps::advise
