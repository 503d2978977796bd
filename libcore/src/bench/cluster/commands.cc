#include "dmlps/bench/cluster/commands.h"

#include <spdlog/fmt/fmt.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <sstream>

#include "dmlps/base/json.h"
#include "dmlps/sync/registry.h"

namespace dmlps::bench {
namespace {

namespace fs = std::filesystem;

std::string Number(double value) { return fmt::format("{}", value); }

// A schedule as its flag takes it: I:V,I:V...
std::string ScheduleText(const std::vector<std::pair<int64_t, double>>& entries) {
  std::string text;
  for (const auto& entry : entries) {
    if (!text.empty()) text += ',';
    text += std::to_string(entry.first) + ":" + Number(entry.second);
  }
  return text;
}

// "K/S", as --shard takes it.
std::string ShardName(int64_t k, int64_t shards) { return fmt::format("{}/{}", k, shards); }

std::string WorkerTrace(const ClusterOptions& options, int64_t rank) {
  return (fs::path(options.trace_dir) / fmt::format("worker-{}.trace", rank)).string();
}

}  // namespace

std::string ServerOptimizerRule(const std::vector<std::string>& server_args) {
  std::string rule = "sgd";
  for (size_t i = 0; i < server_args.size(); ++i) {
    if (server_args[i] == "--optimizer" && i + 1 < server_args.size()) rule = server_args[i + 1];
    if (server_args[i].starts_with("--optimizer=")) rule = server_args[i].substr(12);
  }
  return rule;
}

std::vector<std::string> ServerCommand(const Experiment& e, const sync::PolicyConfig& policy,
                                       const ClusterOptions& options,
                                       const std::string& endpoint_file,
                                       const std::string& report_file, const Codecs& codecs) {
  std::vector<std::string> argv = {(fs::path(options.bin_dir) / "dmlps-server").string(),
                                   "--workers", std::to_string(e.job.workers)};
  const std::vector<std::string> policy_flags = sync::PolicyServerFlags(policy);
  argv.insert(argv.end(), policy_flags.begin(), policy_flags.end());
  argv.insert(argv.end(), {"--model",
                           e.job.model,
                           "--data",
                           e.job.data,
                           "--batch",
                           std::to_string(e.job.batch),
                           "--lr",
                           Number(e.job.lr),
                           "--eval-every",
                           std::to_string(e.job.eval_every),
                           "--seed",
                           std::to_string(e.job.seed),
                           "--bind",
                           "tcp://127.0.0.1:*",
                           "--endpoint-file",
                           endpoint_file,
                           "--report",
                           report_file,
                           "--target-accuracy",
                           Number(e.job.target_accuracy),
                           "--max-iterations",
                           std::to_string(e.job.max_iterations),
                           "--max-seconds",
                           Number(e.job.max_seconds)});
  if (!options.trace_dir.empty()) {
    argv.insert(argv.end(), {"--trace", (fs::path(options.trace_dir) / "server.trace").string()});
  }
  // --momentum is SGD's: a server told to use Adam takes its --betas.
  if (ServerOptimizerRule(options.server_args) == "sgd") {
    argv.insert(argv.end(), {"--momentum", Number(e.job.momentum)});
  }
  if (!options.evaluator_command.empty()) argv.push_back("--evaluator");
  if (options.deterministic) argv.push_back("--deterministic");
  if (options.shards > 1) argv.insert(argv.end(), {"--shard", ShardName(0, options.shards)});
  if (options.target_loss > 0)
    argv.insert(argv.end(), {"--target-loss", Number(options.target_loss)});
  // Left out when none, so that a dense run asks nothing of the server's codec flags.
  if (codecs.push != compress::Codec{}) {
    argv.insert(argv.end(), {"--push-codec", compress::CodecName(codecs.push)});
  }
  if (codecs.pull != compress::Codec{}) {
    argv.insert(argv.end(), {"--pull-codec", compress::CodecName(codecs.pull)});
  }
  argv.insert(argv.end(), options.server_args.begin(), options.server_args.end());
  return argv;
}

std::vector<std::string> ShardCommand(const ClusterOptions& options, int64_t k,
                                      const std::string& endpoint) {
  return {(fs::path(options.bin_dir) / "dmlps-server").string(),
          "--bind",
          "tcp://127.0.0.1:*",
          "--shard",
          ShardName(k, options.shards),
          "--coordinator",
          endpoint};
}

std::vector<std::string> StragglerFlags(const Experiment& e, int64_t rank) {
  const worker::StragglerSpec& s = e.stragglers[static_cast<size_t>(rank)];
  std::vector<std::string> argv = {
      "--slowdown",
      Number(s.slowdown),
      "--delay-ms",
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(s.delay).count()),
      "--delay-prob",
      Number(s.delay_prob),
      "--round-robin-ms",
      std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(s.round_robin).count()),
      "--bandwidth-mbps",
      Number(s.bandwidth_mbps)};
  if (!s.schedule.empty())
    argv.insert(argv.end(), {"--slowdown-schedule", ScheduleText(s.schedule)});
  if (!s.bandwidth_schedule.empty()) {
    argv.insert(argv.end(), {"--bandwidth-schedule", ScheduleText(s.bandwidth_schedule)});
  }
  return argv;
}

std::vector<std::string> WorkerCommand(const Experiment& e, int64_t rank,
                                       const ClusterOptions& options, const std::string& endpoint) {
  std::vector<std::string> argv = {(fs::path(options.bin_dir) / "dmlps-worker").string(),
                                   "--server",
                                   endpoint,
                                   "--rank",
                                   std::to_string(rank),
                                   "--data",
                                   e.job.data,
                                   "--threads",
                                   std::to_string(options.threads)};
  const std::vector<std::string> straggler = StragglerFlags(e, rank);
  argv.insert(argv.end(), straggler.begin(), straggler.end());
  if (!options.trace_dir.empty()) argv.insert(argv.end(), {"--trace", WorkerTrace(options, rank)});
  return argv;
}

std::vector<std::string> WorkerEnvironment(const Experiment& e, int64_t rank,
                                           const ClusterOptions& options,
                                           const std::string& endpoint) {
  const std::vector<std::string> flags = StragglerFlags(e, rank);
  std::string flag_text;
  // The options as dmlps.Worker's keywords: rank, threads and seed as the
  // worker would have them, the flags without their leading "--", dashes
  // turned into underscores; numbers as numbers, schedules as text.
  std::ostringstream json;
  json << "{\"rank\": " << rank << ", \"threads\": " << options.threads
       << ", \"seed\": " << e.job.seed;
  std::vector<std::string> env;
  for (size_t i = 0; i + 1 < flags.size(); i += 2) {
    flag_text += (flag_text.empty() ? "" : " ") + flags[i] + " " + flags[i + 1];
    std::string key = flags[i].substr(2);
    std::string name = "DMLPS_";
    for (char& c : key) {
      if (c == '-') c = '_';
      name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    json << ", ";
    WriteJsonString(key, json);
    json << ": ";
    if (key.find("schedule") != std::string::npos) {
      WriteJsonString(flags[i + 1], json);
    } else {
      json << flags[i + 1];
    }
    env.push_back(name + "=" + flags[i + 1]);
  }
  const std::string trace = options.trace_dir.empty() ? "" : WorkerTrace(options, rank);
  if (!trace.empty()) {
    json << ", \"trace\": ";
    WriteJsonString(trace, json);
  }
  json << "}";
  const worker::StragglerSpec& s = e.stragglers[static_cast<size_t>(rank)];
  if (s.schedule.empty()) env.push_back("DMLPS_SLOWDOWN_SCHEDULE=");
  if (s.bandwidth_schedule.empty()) env.push_back("DMLPS_BANDWIDTH_SCHEDULE=");
  env.insert(env.end(),
             {"DMLPS_SERVER=" + endpoint, "DMLPS_RANK=" + std::to_string(rank),
              "DMLPS_WORKERS=" + std::to_string(e.job.workers), "DMLPS_MODEL=" + e.job.model,
              "DMLPS_DATA=" + e.job.data, "DMLPS_THREADS=" + std::to_string(options.threads),
              "DMLPS_SEED=" + std::to_string(e.job.seed), "DMLPS_BIN=" + options.bin_dir,
              "DMLPS_TRACE=" + trace, "DMLPS_WORKER_FLAGS=" + flag_text,
              "DMLPS_WORKER_OPTIONS=" + json.str()});
  return env;
}

}  // namespace dmlps::bench
