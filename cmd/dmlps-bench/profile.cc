// dmlps-bench profile: parses the Profile flags, runs bench::RunProfile and
// prints the step time against batch size on stdout.
#include "cmd/dmlps-bench/commands.h"
#include "dmlps/cli/bench_programs.h"

namespace dmlps::bench_cli {

void AddProfileOptions(cxxopts::Options& options) {
  const bench::ProfileConfig d;
  options.add_options("Profile")
      ("device", "Where the steps run: cpu, cuda or cuda:N",
       cxxopts::value<std::string>()->default_value(d.device), "DEV")
      ("factor", "Each batch size this many times the one before",
       cxxopts::value<std::string>()->default_value("2"), "F")
      ("reps", "Timed steps per batch size; the table gives their median",
       cxxopts::value<std::string>()->default_value(std::to_string(d.reps)), "R");
}

int ProfileCommand(const cxxopts::ParseResult& parsed, cli::FlagReader& flags) {
  bench::ProfileConfig config;
  config.device = flags.String("device");
  // --batch, --model, --data, --threads and --warmup belong to other groups; read here
  // with profile's own defaults when not given.
  if (parsed.count("batch") > 0) {
    if (Status range = bench::ParseBatchRange(flags.String("batch"), &config.min_batch,
                                              &config.max_batch);
        !range.ok()) {
      flags.AddProblem("--batch: " + range.message());
    }
  }
  // Ranges are ValidateProfileConfig's to check.
  config.factor = flags.Real("factor");
  config.reps = flags.Int("reps");
  if (parsed.count("warmup") > 0) config.warmup = flags.Int("warmup");
  if (parsed.count("threads") > 0) config.threads = flags.Int("threads");
  if (parsed.count("model") > 0) config.model = flags.String("model");
  if (parsed.count("data") > 0) config.data = flags.String("data");
  const bench::Format format = ReadFormat(flags);
  flags.AddProblems(bench::ValidateProfileConfig(config));
  if (!flags.problems().empty()) return cli::ReportUsageErrors(kProgram, flags.problems());

  cli::SetupLogging(kProgram, parsed);
  return cli::RunBenchProfileProgram(config, format);
}

}  // namespace dmlps::bench_cli
