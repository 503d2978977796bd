// dmlps-predict: replays the workers' step speeds of dmlps traces through
// speed predictors and scores their forecasts, as LB-BSP would use them.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "dmlps/cli/cli.h"
#include "dmlps/predict/replay.h"
#include "dmlps/trace/trace.h"

namespace {

constexpr std::string_view kProgram = "dmlps-predict";

}  // namespace

int main(int argc, char** argv) {
  const dmlps::predict::PredictorOptions defaults;
  cxxopts::Options options(
      std::string(kProgram),
      "Replays each worker's step speeds (samples per busy second) from dmlps traces\n"
      "(FILE..., none or '-' for standard input) through speed predictors and prints,\n"
      "per worker and overall, the error of their one-step-ahead forecasts, the steps\n"
      "they took to follow lasting changes and how much one-step spikes moved them.\n");
  options.positional_help("[FILE...]");
  options.add_options("Prediction")
      ("predictors", "Comma-separated predictors: last, ema, arima, narx",
       cxxopts::value<std::string>()->default_value("last,ema,arima,narx"), "LIST")
      ("ema-alpha", "ema: weight of the newest speed",
       cxxopts::value<std::string>()->default_value("0.5"), "A")
      ("arima-order", "arima: the order P,D,Q",
       cxxopts::value<std::string>()->default_value(std::to_string(defaults.arima_p) + "," +
                                                    std::to_string(defaults.arima_d) + "," +
                                                    std::to_string(defaults.arima_q)),
       "P,D,Q")
      ("arima-window", "arima: steps each fit looks back over",
       cxxopts::value<std::string>()->default_value(std::to_string(defaults.arima_window)), "N")
      ("narx-lags", "narx: lags of the speed and of each exogenous input",
       cxxopts::value<std::string>()->default_value(std::to_string(defaults.narx_lags)), "N")
      ("narx-hidden", "narx: hidden tanh units",
       cxxopts::value<std::string>()->default_value(std::to_string(defaults.narx_hidden)), "N");
  options.add_options("Output")
      ("plan", "Also print the batch sizes LB-BSP would set for a global batch B",
       cxxopts::value<std::string>()->default_value("0"), "B")
      ("format", "Output: table, tsv or json",
       cxxopts::value<std::string>()->default_value("table"), "FORMAT");
  options.add_options("Positional")
      ("files", "", cxxopts::value<std::vector<std::string>>());
  options.parse_positional({"files"});
  dmlps::cli::AddCommonOptions(options);

  int exit_code = 0;
  std::optional<cxxopts::ParseResult> parsed =
      dmlps::cli::ParseArgs(options, {"Prediction", "Output", "Common"}, argc, argv, &exit_code);
  if (!parsed) return exit_code;
  dmlps::cli::FlagReader flags(*parsed);

  dmlps::predict::ReplayOptions settings;
  if (auto list = dmlps::predict::ParsePredictorList(flags.String("predictors")); list.ok()) {
    settings.predictors = *list;
  } else {
    flags.AddProblem("--predictors: " + list.status().message());
  }
  dmlps::predict::PredictorOptions& predictor = settings.predictor_options;
  predictor.ema_alpha = flags.Real("ema-alpha", 1e-9, 1);
  if (dmlps::Status s = dmlps::predict::ParseArimaOrder(flags.String("arima-order"), &predictor);
      !s.ok()) {
    flags.AddProblem("--arima-order: " + s.message());
  }
  predictor.arima_window = flags.Int("arima-window", 1, 100000);
  predictor.narx_lags = flags.Int("narx-lags", 1, 64);
  predictor.narx_hidden = flags.Int("narx-hidden", 1, 256);
  settings.plan = flags.Int("plan", 0, int64_t{1} << 40);
  if (flags.problems().empty()) {
    // The settings of every predictor, used or not: a bad one is a mistake
    // whichever predictors this run compares.
    for (const char* name : {"ema", "arima", "narx"}) {
      if (dmlps::Status s = dmlps::predict::ValidatePredictorOptions(name, predictor); !s.ok()) {
        flags.AddProblem(s.message());
      }
    }
  }
  dmlps::predict::ReportFormat format = dmlps::predict::ReportFormat::kTable;
  if (auto f = dmlps::predict::ParseReportFormat(flags.String("format")); f.ok()) {
    format = *f;
  } else {
    flags.AddProblem("--format: " + f.status().message());
  }
  if (!flags.problems().empty()) return dmlps::cli::ReportUsageErrors(kProgram, flags.problems());
  dmlps::cli::SetupLogging(kProgram, *parsed);

  std::vector<std::string> files;
  if (flags.Has("files")) files = (*parsed)["files"].as<std::vector<std::string>>();
  if (files.empty()) files.push_back("-");

  // Read everything first: a missing file ends the run before any output;
  // a damaged one gives what it held, a warning, and exit 65 at the end.
  dmlps::trace::ReadResult read = dmlps::trace::ReadTraces(files, [](const dmlps::Status& why) {
    std::fprintf(stderr, "%s: warning: %s\n", kProgram.data(), why.message().c_str());
  });
  if (!read.status.ok() && read.status.code() != dmlps::StatusCode::kDataLoss) {
    return dmlps::cli::ReportError(kProgram, read.status);
  }
  const bool damaged = !read.status.ok();
  std::vector<dmlps::trace::Record> records = std::move(read.records);

  dmlps::Result<dmlps::predict::ReplayReport> report = dmlps::predict::ReplayTraces(records, settings);
  if (!report.ok()) return dmlps::cli::ReportError(kProgram, report.status());
  dmlps::predict::WriteReplayReport(*report, format, std::cout);
  std::cout.flush();
  if (!std::cout) {
    return dmlps::cli::ReportError(kProgram,
                                   dmlps::Status::IOError("cannot write to standard output"));
  }
  return damaged ? dmlps::ExitCodeFor(dmlps::Status::DataLoss("")) : 0;
}
