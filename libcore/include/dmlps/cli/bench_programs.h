// What dmlps-bench's subcommands do once their flags are read and checked:
// one function each, which runs the subcommand, writes its table to stdout
// (progress and errors to stderr) and returns the exit code (see cli.h).
// REQUIRES of each: its config checked, logging set up.
#ifndef DMLPS_CLI_BENCH_PROGRAMS_H_
#define DMLPS_CLI_BENCH_PROGRAMS_H_

#include <string>
#include <string_view>
#include <vector>

#include "dmlps/advise/advisor.h"
#include "dmlps/bench/cluster/run.h"
#include "dmlps/bench/codec.h"
#include "dmlps/bench/experiment.h"
#include "dmlps/bench/profile.h"
#include "dmlps/bench/report.h"
#include "dmlps/bench/transport/transport.h"
#include "dmlps/sim/sim.h"

namespace dmlps::cli {

inline constexpr std::string_view kBenchProgram = "dmlps-bench";

// run: the experiment on real clusters (bench::RunExperiment), with a live
// status line on a terminal. An empty options.out_dir means a temporary
// folder, removed at the end unless a run failed. Exit 1 when a run failed.
int RunBenchRunProgram(const bench::Experiment& experiment, bench::ExperimentOptions options,
                       bench::Format format);

// sim: the experiment simulated (sim::SimulateExperiment), with a status
// line on a terminal. Exit 1 when a run failed.
int RunBenchSimProgram(const bench::Experiment& experiment, sim::SimOptions options,
                       bench::Format format);

// transport: bench::RunTransportBench, a log line per measurement.
int RunBenchTransportProgram(const bench::TransportConfig& config, bench::Format format);

// profile: bench::RunProfile, a log line per batch size.
int RunBenchProfileProgram(const bench::ProfileConfig& config, bench::Format format);

// codec: bench::RunCodecBench, a log line per codec and size.
int RunBenchCodecProgram(const bench::CodecBenchConfig& config, bench::Format format);

// What advise is asked.
struct AdviseConfig {
  std::vector<std::string> traces;              // files, or one run's folder
  std::vector<std::string> candidates;          // empty: advise::DefaultCandidates
  double target = -1;                           // accuracy; below 0: the run's own target
  double bsp_iterations = 0;                    // BSP's iterations to it; 0: from the run
  int64_t iterations = advise::kSimIterations;  // simulated per candidate
};

// advise: measures one run's traces (advise::MeasureTraces), predicts each
// candidate on the profile (advise::Advisor) and writes the predictions and
// the recommendation with its reason. The traces' errors as sysexits codes.
int RunBenchAdviseProgram(const AdviseConfig& config, bench::Format format);

}  // namespace dmlps::cli

#endif  // DMLPS_CLI_BENCH_PROGRAMS_H_
