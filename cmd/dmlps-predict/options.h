// dmlps-predict's flags: their declaration and their reading into the
// replay's options.
#ifndef DMLPS_CMD_PREDICT_OPTIONS_H_
#define DMLPS_CMD_PREDICT_OPTIONS_H_

#include "dmlps/cli/cli.h"
#include "dmlps/cli/cxxopts.h"
#include "dmlps/predict/replay.h"

namespace dmlps::predict_cli {

// Declares the Prediction and Output flags, the positional FILE... and the
// Common flags.
void AddPredictOptions(cxxopts::Options& options);

// Reads the replay's options, checking the settings of every predictor,
// used or not: a bad one is a mistake whichever this run compares.
// Problems collect in `flags`.
predict::ReplayOptions ReadReplayOptions(cli::FlagReader& flags);
// Reads --format.
predict::ReportFormat ReadReportFormat(cli::FlagReader& flags);

}  // namespace dmlps::predict_cli

#endif  // DMLPS_CMD_PREDICT_OPTIONS_H_
