// dmlps-bench's subcommands. Each adds its own option group to the one
// parser (so --help shows them all and the docs test sees every flag) and
// reads its flags itself; main() refuses flags of another subcommand's group.
#ifndef DMLPS_CMD_BENCH_COMMANDS_H_
#define DMLPS_CMD_BENCH_COMMANDS_H_

#include <string>
#include <utility>
#include <vector>

#include "dmlps/bench/experiment.h"
#include "dmlps/bench/report.h"
#include "dmlps/cli/bench_programs.h"
#include "dmlps/cli/cli.h"
#include "dmlps/cli/cxxopts.h"
#include "dmlps/cli/subcommands.h"

namespace dmlps::bench_cli {

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

// What runs a subcommand that takes one config: `run` on `config`, in the
// --format given, once `validate`'s problems (none: it has no check) are
// collected in `flags`.
template <typename Config>
cli::Program ProgramFor(cli::FlagReader& flags, Config config,
                        std::vector<std::string> (*validate)(const Config&),
                        int (*run)(const Config&, bench::Format)) {
  const bench::Format format = ReadFormat(flags);
  if (validate != nullptr) flags.AddProblems(validate(config));
  return [config = std::move(config), format, run] { return run(config, format); };
}

// Each subcommand's option group(s).
void AddRunOptions(cxxopts::Options& options);
void AddSimOptions(cxxopts::Options& options);
void AddTransportOptions(cxxopts::Options& options);
void AddProfileOptions(cxxopts::Options& options);
void AddCodecOptions(cxxopts::Options& options);
void AddAdviseOptions(cxxopts::Options& options);

// Each subcommand's reading of its flags: problems collect in `flags`; it
// returns what runs the subcommand (see cli::RunMain).
cli::Program ReadRunFlags(cli::FlagReader& flags);
cli::Program ReadSimFlags(cli::FlagReader& flags);
cli::Program ReadTransportFlags(cli::FlagReader& flags);
// profile also reads --batch (as LO..HI), --model, --data (Experiment),
// --threads (Run) and --warmup (Transport).
cli::Program ReadProfileFlags(cli::FlagReader& flags);
// codec also reads --sizes (Transport) and --repeat (Experiment).
cli::Program ReadCodecFlags(cli::FlagReader& flags);
// The flags profile and codec read from other groups, with the defaults
// they take (their configs' own), for their --help.
std::vector<cli::BorrowedFlag> ProfileBorrowedFlags();
std::vector<cli::BorrowedFlag> CodecBorrowedFlags();
// advise reads the positional TRACE... as "traces".
cli::Program ReadAdviseFlags(cli::FlagReader& flags);

}  // namespace dmlps::bench_cli

#endif  // DMLPS_CMD_BENCH_COMMANDS_H_
