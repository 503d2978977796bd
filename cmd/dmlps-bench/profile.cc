// dmlps-bench profile: parses the Profile flags, runs bench::RunProfile and
// prints the step time against batch size on stdout.
#include <spdlog/fmt/fmt.h>

#include "cmd/dmlps-bench/commands.h"
#include "dmlps/cli/bench_programs.h"

namespace dmlps::bench_cli {

void AddProfileOptions(cxxopts::Options& options) {
  const bench::ProfileConfig d;
  cli::AddFlags(options, "Profile",
                {{"device", "Where the steps run: cpu, cuda or cuda:N", "DEV", d.device},
                 {"factor", "Each batch size this many times the one before", "F", "2"},
                 {"reps", "Timed steps per batch size; the table gives their median", "R",
                  std::to_string(d.reps)}});
}

cli::Program ReadProfileFlags(cli::FlagReader& flags) {
  bench::ProfileConfig config;
  config.device = flags.String("device");
  // --batch, --model, --data, --threads and --warmup belong to other groups; read here
  // with profile's own defaults when not given.
  if (flags.Has("batch")) {
    if (Status range =
            bench::ParseBatchRange(flags.String("batch"), &config.min_batch, &config.max_batch);
        !range.ok()) {
      flags.AddProblem("--batch: " + range.message());
    }
  }
  // Ranges are ValidateProfileConfig's to check.
  config.factor = flags.Real("factor");
  config.reps = flags.Int("reps");
  if (flags.Has("warmup")) config.warmup = flags.Int("warmup");
  if (flags.Has("threads")) config.threads = flags.Int("threads");
  if (flags.Has("model")) config.model = flags.String("model");
  if (flags.Has("data")) config.data = flags.String("data");
  return ProgramFor(flags, std::move(config), bench::ValidateProfileConfig,
                    cli::RunBenchProfileProgram);
}

std::vector<cli::BorrowedFlag> ProfileBorrowedFlags() {
  const bench::ProfileConfig d;
  return {{"batch", fmt::format("{}..{}", d.min_batch, d.max_batch)},
          {"model", d.model},
          {"data", d.data},
          {"threads", std::to_string(d.threads)},
          {"warmup", std::to_string(d.warmup)}};
}

}  // namespace dmlps::bench_cli
