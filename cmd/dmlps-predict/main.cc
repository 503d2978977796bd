// dmlps-predict: replays the workers' step speeds of dmlps traces through
// speed predictors and scores their forecasts, as LB-BSP would use them.
#include <string>

#include "cmd/dmlps-predict/options.h"
#include "dmlps/cli/trace_programs.h"

int main(int argc, char** argv) {
  namespace cli = dmlps::cli;
  cxxopts::Options options(
      std::string(cli::kPredictProgram),
      "Replays each worker's step speeds (samples per busy second) from dmlps traces\n"
      "(FILE..., none or '-' for standard input) through speed predictors and prints,\n"
      "per worker and overall, the error of their one-step-ahead forecasts, the steps\n"
      "they took to follow lasting changes and how much one-step spikes moved them.\n");
  options.positional_help("[FILE...]");
  dmlps::predict_cli::AddPredictOptions(options);

  int exit_code = 0;
  std::optional<cxxopts::ParseResult> parsed =
      cli::ParseArgs(options, {"Prediction", "Output", "Common"}, argc, argv, &exit_code);
  if (!parsed) return exit_code;
  cli::FlagReader flags(*parsed);
  const dmlps::predict::ReplayOptions settings = dmlps::predict_cli::ReadReplayOptions(flags);
  const dmlps::predict::ReportFormat format = dmlps::predict_cli::ReadReportFormat(flags);
  if (!flags.problems().empty()) return cli::ReportUsageErrors(cli::kPredictProgram, flags.problems());

  cli::SetupLogging(cli::kPredictProgram, *parsed);
  return cli::RunPredictProgram(flags.List("files"), settings, format);
}
