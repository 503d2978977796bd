// dmlps-bench run: real clusters on this host, one per policy and repeat,
// the policies taking turns.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "cmd/dmlps-bench/commands.h"
#include "dmlps/bench/cluster/commands.h"
#include "dmlps/cli/bench_programs.h"

namespace dmlps::bench_cli {
namespace {

// What is wrong with the user's commands for this experiment: an empty
// command, and a model the server cannot score without an evaluator.
std::vector<std::string> CheckCommands(const bench::Experiment& e,
                                       const bench::ClusterOptions& cluster) {
  std::vector<std::string> problems;
  if (cluster.worker_command.find_first_not_of(" \t") == std::string::npos &&
      !cluster.worker_command.empty()) {
    problems.push_back("--worker-command: an empty command");
  }
  if (cluster.evaluator_command.find_first_not_of(" \t") == std::string::npos &&
      !cluster.evaluator_command.empty()) {
    problems.push_back("--evaluator-command: an empty command");
  }
  if (e.job.model != "external") return problems;
  if (cluster.worker_command.empty()) {
    problems.push_back(
        "--model external needs --worker-command: dmlps-worker announces no model of its own");
  }
  if ((e.job.target_accuracy > 0 || cluster.target_loss > 0) && cluster.evaluator_command.empty()) {
    problems.push_back(
        std::string(e.job.target_accuracy > 0 ? "--target" : "--target-loss") +
        " with --model external needs --evaluator-command: the server cannot score a model it "
        "does not know (or give --target 0 and --max-iterations or --max-seconds)");
  }
  return problems;
}

// --server-args as words, each problem with them in *problems: a flag the
// bench sets itself, which the server would take twice.
std::vector<std::string> ReadServerArgs(const std::string& text, const bench::Experiment& e,
                                        const bench::ClusterOptions& cluster,
                                        std::vector<std::string>* problems) {
  std::vector<std::string> args;
  std::istringstream words(text);
  for (std::string word; words >> word;) args.push_back(word);
  // A bad entry is ValidateExperiment's to report.
  const Result<sync::PolicyConfig> policy =
      e.policies.empty() ? Result<sync::PolicyConfig>(Status::InvalidArgument("no policy"))
                         : bench::PolicyFor(e.policies.front(), e);
  if (!policy.ok()) return args;
  bench::ClusterOptions without = cluster;
  without.server_args.clear();
  const std::vector<std::string> own =
      bench::ServerCommand(e, *policy, without, "ENDPOINT", "REPORT");
  for (const std::string& arg : args) {
    const std::string flag = arg.substr(0, arg.find('='));
    if (flag.starts_with("--") && std::find(own.begin(), own.end(), flag) != own.end()) {
      problems->push_back("--server-args: " + flag +
                          " is one dmlps-bench sets itself (give it to dmlps-bench)");
    }
  }
  return args;
}

}  // namespace

void AddRunOptions(cxxopts::Options& options) {
  cli::AddFlags(
      options, "Run",
      {{"bin", "Folder holding dmlps-server and dmlps-worker (default: this program's folder)",
        "DIR"},
       {"out",
        "Keep every run's logs, evaluations and report in DIR/POLICY-REPEAT (default: a "
        "temporary folder, named in the log and removed at the end unless a run failed)",
        "DIR"},
       {"trace-dir", "Trace every process: DIR/POLICY-REPEAT/server.trace and worker-R.trace",
        "DIR"},
       {"threads", "Threads each worker gives its linear algebra", "N", "1"},
       {"worker-command",
        "Run each worker as `sh -c CMD` instead of dmlps-worker, its details in DMLPS_* "
        "variables (DMLPS_SERVER, DMLPS_RANK, DMLPS_WORKER_FLAGS, DMLPS_WORKER_OPTIONS...; see "
        "dmlps-bench(1))",
        "CMD"},
       {"evaluator-command",
        "Start each server with --evaluator and run `sh -c CMD` once per run to score its "
        "snapshots, DMLPS_SERVER naming the server (needed for a target with --model external)",
        "CMD"},
       {"server-args",
        "More flags for every server, separated by spaces, after dmlps-bench's own: a job's "
        "optimizer recipe (--optimizer adamw --weight-decay 0.05 ...), say",
        "ARGS"},
       {"target-loss",
        "Target mean test loss: a run's time is its time to a loss at most this (with "
        "--target too: both; without --target given, the accuracy target is off)",
        "LOSS"},
       {"deterministic",
        "Start each server with --deterministic: each update's gradients summed in rank "
        "order, so that a policy's runs do not differ by the order pushes arrive in"},
       {"seed-per-repeat",
        "Run repeat K with seed N+K-1 (N: --seed), every policy alike, so that the repeats "
        "sample K initial models and data orders rather than one"},
       {"shuffle",
        "Run each repeat's policies in an order of its own, drawn from --seed and the repeat, "
        "so that no policy always runs after the same one"}});
}

cli::Program ReadRunFlags(cli::FlagReader& flags) {
  bench::Experiment experiment = ReadExperiment(flags);
  const bench::Format format = ReadFormat(flags);
  bench::ExperimentOptions options;
  options.cluster.bin_dir = flags.Has("bin") ? flags.String("bin") : cli::ProgramFolder();
  options.cluster.threads = flags.Int("threads", 1, 1024);
  // --shards is transport's flag too (a list there): here one count.
  options.cluster.shards = flags.Has("shards") ? flags.Int("shards", 1, 64) : 1;
  if (flags.Has("worker-command")) options.cluster.worker_command = flags.String("worker-command");
  if (flags.Has("evaluator-command"))
    options.cluster.evaluator_command = flags.String("evaluator-command");
  options.cluster.deterministic = flags.Has("deterministic");
  if (flags.Has("target-loss")) {
    options.cluster.target_loss = flags.Real("target-loss", 1e-30, 1e30);
    // A loss target alone: the accuracy target's default does not apply.
    if (!flags.Has("target")) experiment.job.target_accuracy = 0;
  }
  if (flags.Has("server-args")) {
    std::vector<std::string> problems;
    options.cluster.server_args =
        ReadServerArgs(flags.String("server-args"), experiment, options.cluster, &problems);
    for (const std::string& problem : problems) flags.AddProblem(problem);
    if (flags.Has("momentum") && bench::ServerOptimizerRule(options.cluster.server_args) != "sgd") {
      flags.AddProblem("--momentum is sgd's; the --optimizer of --server-args takes --betas");
    }
  }
  options.seed_per_repeat = flags.Has("seed-per-repeat");
  options.shuffle = flags.Has("shuffle");
  for (const std::string& problem : CheckCommands(experiment, options.cluster))
    flags.AddProblem(problem);
  std::vector<const char*> binaries = {"dmlps-server"};
  if (options.cluster.worker_command.empty()) binaries.push_back("dmlps-worker");
  for (const char* binary : binaries) {
    const std::filesystem::path path = std::filesystem::path(options.cluster.bin_dir) / binary;
    if (access(path.c_str(), X_OK) != 0) {
      flags.AddProblem(std::string(binary) + " not found in " + options.cluster.bin_dir +
                       (flags.Has("bin") ? "" : " (give --bin DIR)"));
    }
  }
  if (flags.Has("out")) options.out_dir = flags.String("out");
  if (flags.Has("trace-dir")) options.trace_dir = flags.String("trace-dir");
  return [experiment, options, format] {
    return cli::RunBenchRunProgram(experiment, options, format);
  };
}

}  // namespace dmlps::bench_cli
