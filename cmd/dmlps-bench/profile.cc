// dmlps-bench profile: parses the Profile flags, runs bench::RunProfile and
// prints the step time against batch size on stdout.
#include <spdlog/spdlog.h>

#include <iostream>

#include "cmd/dmlps-bench/commands.h"
#include "dmlps/bench/profile.h"

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
  const std::atomic<int>* signal = cli::InstallSignalHandlers();
  auto progress = [](const bench::ProfileRow& row) {
    spdlog::info("batch {}: median {:.3f} ms (min {:.3f}, max {:.3f}), {:.0f} samples/s",
                 row.batch, row.ms.median, row.ms.min, row.ms.max, row.samples_per_s);
  };
  Result<bench::ProfileReport> report = bench::RunProfile(config, signal, progress);
  if (signal->load() != 0) return cli::ExitCodeForSignal(signal->load());
  if (!report.ok()) return cli::ReportError(kProgram, report.status());
  bench::WriteProfileReport(*report, format, std::cout);
  std::cout.flush();
  return 0;
}

}  // namespace dmlps::bench_cli
