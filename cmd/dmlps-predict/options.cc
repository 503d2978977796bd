#include "cmd/dmlps-predict/options.h"

#include <string>
#include <vector>

#include "dmlps/cli/values.h"

namespace dmlps::predict_cli {

void AddPredictOptions(cxxopts::Options& options) {
  const predict::PredictorOptions defaults;
  cli::AddFlags(
      options, "Prediction",
      {{"predictors", "Comma-separated predictors: last, ema, arima, narx", "LIST",
        "last,ema,arima,narx"},
       {"ema-alpha", "ema: weight of the newest speed", "A", "0.5"},
       {"arima-order", "arima: the order P,D,Q", "P,D,Q",
        cli::FormatArimaOrder(defaults.arima_p, defaults.arima_d, defaults.arima_q)},
       {"arima-window", "arima: steps each fit looks back over", "N",
        std::to_string(defaults.arima_window)},
       {"narx-lags", "narx: lags of the speed and of each exogenous input", "N",
        std::to_string(defaults.narx_lags)},
       {"narx-hidden", "narx: hidden tanh units", "N", std::to_string(defaults.narx_hidden)}});
  cli::AddFlags(
      options, "Output",
      {{"plan", "Also print the batch sizes LB-BSP would set for a global batch B", "B", "0"},
       {"format", "Output: table, tsv or json", "FORMAT", "table"}});
  options.add_options("Positional")("files", "", cxxopts::value<std::vector<std::string>>());
  options.parse_positional({"files"});
  cli::AddCommonOptions(options);
}

predict::ReplayOptions ReadReplayOptions(cli::FlagReader& flags) {
  predict::ReplayOptions settings;
  if (auto list = predict::ParsePredictorList(flags.String("predictors")); list.ok()) {
    settings.predictors = *list;
  } else {
    flags.AddProblem("--predictors: " + list.status().message());
  }
  predict::PredictorOptions& predictor = settings.predictor_options;
  predictor.ema_alpha = flags.Real("ema-alpha", 1e-9, 1);
  if (Status s = predict::ParseArimaOrder(flags.String("arima-order"), &predictor); !s.ok()) {
    flags.AddProblem("--arima-order: " + s.message());
  }
  predictor.arima_window = flags.Int("arima-window", 1, 100000);
  predictor.narx_lags = flags.Int("narx-lags", 1, 64);
  predictor.narx_hidden = flags.Int("narx-hidden", 1, 256);
  settings.plan = flags.Int("plan", 0, int64_t{1} << 40);
  if (flags.problems().empty()) {
    for (const char* name : {"ema", "arima", "narx"}) {
      if (Status s = predict::ValidatePredictorOptions(name, predictor); !s.ok()) {
        flags.AddProblem(s.message());
      }
    }
  }
  return settings;
}

predict::ReportFormat ReadReportFormat(cli::FlagReader& flags) {
  Result<predict::ReportFormat> format = predict::ParseReportFormat(flags.String("format"));
  if (format.ok()) return *format;
  flags.AddProblem("--format: " + format.status().message());
  return predict::ReportFormat::kTable;
}

}  // namespace dmlps::predict_cli
