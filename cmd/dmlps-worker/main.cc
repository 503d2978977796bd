// dmlps-worker: joins a dmlps-server, trains on its shard of the data and
// pushes gradients until the server says stop.
#include "dmlps/cli/cli.h"
#include "dmlps/worker/worker.h"

int main(int argc, char** argv) {
  using dmlps::worker::WorkerConfig;
  const WorkerConfig defaults;
  cxxopts::Options options("dmlps-worker",
                           "Training worker: joins a dmlps-server, which sends it the model,\n"
                           "its rank, shard and batch size; trains until told to stop.\n");
  options.add_options("Cluster")
      ("server", "Address of the server",
       cxxopts::value<std::string>()->default_value(defaults.server), "ADDR")
      ("rank", "Ask for this rank (default: the server assigns one)",
       cxxopts::value<std::string>(), "R")
      ("connect-timeout", "Give up (exit 69) when no server answers within SECONDS",
       cxxopts::value<std::string>()->default_value("10"), "SECONDS")
      ("server-timeout", "Give up (exit 69) when the server is silent for SECONDS",
       cxxopts::value<std::string>()->default_value("30"), "SECONDS");
  options.add_options("Training")
      ("data", "Dataset: fashion-mnist, fashion-mnist:DIR, idx:DIR or libsvm:FILE",
       cxxopts::value<std::string>()->default_value(defaults.data), "SPEC")
      ("threads", "Threads for the model's linear algebra",
       cxxopts::value<std::string>()->default_value("1"), "N");
  options.add_options("Straggler emulation")
      ("slowdown", "After a step whose compute took t, sleep (K-1)*t",
       cxxopts::value<std::string>()->default_value("1"), "K")
      ("delay-prob", "With probability P per step, sleep a further --delay-ms",
       cxxopts::value<std::string>()->default_value("0"), "P")
      ("delay-ms", "Length of a transient delay in milliseconds",
       cxxopts::value<std::string>()->default_value("0"), "D");
  dmlps::cli::AddCommonOptions(options);

  int exit_code = 0;
  std::optional<cxxopts::ParseResult> parsed = dmlps::cli::ParseArgs(
      options, {"Cluster", "Training", "Straggler emulation", "Common"}, argc, argv, &exit_code);
  if (!parsed) return exit_code;
  dmlps::cli::FlagReader flags(*parsed);
  WorkerConfig config;
  config.server = flags.String("server");
  if (flags.Has("rank")) config.rank = flags.Int("rank", 0, 100000);
  config.connect_timeout = std::chrono::milliseconds(
      static_cast<int64_t>(flags.Real("connect-timeout", 0.001, 1e6) * 1000));
  config.server_timeout = std::chrono::milliseconds(
      static_cast<int64_t>(flags.Real("server-timeout", 0.001, 1e6) * 1000));
  config.data = flags.String("data");
  config.threads = flags.Int("threads", 1, 1024);
  config.slowdown = flags.Real("slowdown", 1, 1e6);
  config.delay_prob = flags.Real("delay-prob", 0, 1);
  config.delay_ms = flags.Int("delay-ms", 0, 86400000);
  flags.AddProblems(dmlps::worker::ValidateConfig(config));
  if (!flags.problems().empty()) return dmlps::cli::ReportUsageErrors("dmlps-worker", flags.problems());

  dmlps::cli::SetupLogging("dmlps-worker", *parsed);
  const std::atomic<int>* signal = dmlps::cli::InstallSignalHandlers();
  dmlps::Result<dmlps::worker::WorkerReport> report = dmlps::worker::RunWorker(config, signal);
  if (!report.ok()) return dmlps::cli::ReportError("dmlps-worker", report.status());
  if (report->signal != 0) return dmlps::cli::ExitCodeForSignal(report->signal);
  return 0;
}
