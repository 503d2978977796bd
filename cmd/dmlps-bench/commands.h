// dmlps-bench's subcommands. Each adds its own option group to the one
// parser (so --help shows them all and the docs test sees every flag) and
// reads its flags itself; main() refuses flags of another subcommand's group.
#ifndef DMLPS_CMD_BENCH_COMMANDS_H_
#define DMLPS_CMD_BENCH_COMMANDS_H_

#include <atomic>
#include <cxxopts.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/bench/experiment.h"
#include "dmlps/bench/report.h"
#include "dmlps/cli/bench_programs.h"
#include "dmlps/cli/cli.h"

namespace dmlps::bench_cli {

inline constexpr std::string_view kProgram = cli::kBenchProgram;

// Every subcommand's option groups, the positional SUBCOMMAND and the
// Common flags: one parser for all.
void AddOptions(cxxopts::Options& options);
// The option groups, in the order --help shows them.
const std::vector<std::string>& HelpGroups();

// "Experiment": the job, the straggler profiles and the policies, shared by
// run and sim.
void AddExperimentOptions(cxxopts::Options& options);
bench::Experiment ReadExperiment(cli::FlagReader& flags);
// "Output": --format, shared by all subcommands.
void AddOutputOptions(cxxopts::Options& options);
bench::Format ReadFormat(cli::FlagReader& flags);

// Each subcommand: its option group(s), and its body. The body reads its
// flags with `flags` (where problems collect), reports usage errors itself
// (exit 64), then sets up logging and runs; it returns the exit code.
void AddRunOptions(cxxopts::Options& options);
int RunCommand(const cxxopts::ParseResult& parsed, cli::FlagReader& flags);

void AddSimOptions(cxxopts::Options& options);
int SimCommand(const cxxopts::ParseResult& parsed, cli::FlagReader& flags);

void AddTransportOptions(cxxopts::Options& options);
int TransportCommand(const cxxopts::ParseResult& parsed, cli::FlagReader& flags);

// profile also reads --batch (as LO..HI), --model, --data (Experiment),
// --threads (Run) and --warmup (Transport).
void AddProfileOptions(cxxopts::Options& options);
int ProfileCommand(const cxxopts::ParseResult& parsed, cli::FlagReader& flags);

}  // namespace dmlps::bench_cli

#endif  // DMLPS_CMD_BENCH_COMMANDS_H_
