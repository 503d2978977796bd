// What dmlps-bench run gives a user's worker command: the worker's details
// and its straggler profile in the forms dmlps-worker and dmlps.Worker take,
// and the server's --evaluator when an evaluator command runs.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "dmlps/bench/cluster/commands.h"

namespace dmlps::bench {
namespace {

std::string Value(const std::vector<std::string>& env, const std::string& name) {
  for (const std::string& v : env) {
    if (v.rfind(name + "=", 0) == 0) return v.substr(name.size() + 1);
  }
  return "<unset>";
}

Experiment TwoWorkers() {
  Experiment e;
  e.job.workers = 2;
  e.stragglers.assign(2, worker::StragglerSpec{});
  e.stragglers[1].slowdown = 4;
  e.stragglers[1].delay = std::chrono::milliseconds(5);
  e.stragglers[1].schedule = {{0, 1}, {150, 4}};
  e.job.seed = 7;
  return e;
}

TEST_CASE("a worker command gets its server, rank and straggler profile") {
  const Experiment e = TwoWorkers();
  ClusterOptions options;
  options.bin_dir = "/opt/dmlps/bin";
  options.threads = 2;
  const std::vector<std::string> env = WorkerEnvironment(e, 1, options, "tcp://127.0.0.1:4000");
  CHECK(Value(env, "DMLPS_SERVER") == "tcp://127.0.0.1:4000");
  CHECK(Value(env, "DMLPS_RANK") == "1");
  CHECK(Value(env, "DMLPS_WORKERS") == "2");
  CHECK(Value(env, "DMLPS_BIN") == "/opt/dmlps/bin");
  CHECK(Value(env, "DMLPS_TRACE").empty());
  CHECK(Value(env, "DMLPS_SLOWDOWN") == "4");
  CHECK(Value(env, "DMLPS_DELAY_MS") == "5");
  CHECK(Value(env, "DMLPS_SLOWDOWN_SCHEDULE") == "0:1,150:4");
  CHECK(Value(env, "DMLPS_BANDWIDTH_SCHEDULE").empty());
  CHECK(Value(env, "DMLPS_WORKER_FLAGS") ==
        "--slowdown 4 --delay-ms 5 --delay-prob 0 --round-robin-ms 0 --bandwidth-mbps 0 "
        "--slowdown-schedule 0:1,150:4");
  CHECK(Value(env, "DMLPS_WORKER_OPTIONS") ==
        "{\"rank\": 1, \"threads\": 2, \"seed\": 7, \"slowdown\": 4, \"delay_ms\": 5, "
        "\"delay_prob\": 0, \"round_robin_ms\": 0, \"bandwidth_mbps\": 0, "
        "\"slowdown_schedule\": \"0:1,150:4\"}");
  // The flags are those dmlps-worker gets when the bench runs it.
  const std::vector<std::string> argv = WorkerCommand(e, 1, options, "tcp://127.0.0.1:4000");
  const std::vector<std::string> flags = StragglerFlags(e, 1);
  CHECK(std::search(argv.begin(), argv.end(), flags.begin(), flags.end()) != argv.end());
  // Each variable is set once.
  for (const std::string& v : env) {
    const std::string name = v.substr(0, v.find('='));
    CHECK(Value(env, name) == v.substr(name.size() + 1));
    CHECK(std::count_if(env.begin(), env.end(), [&name](const std::string& w) {
            return w.rfind(name + "=", 0) == 0;
          }) == 1);
  }
}

TEST_CASE("the server is started with --evaluator only for an evaluator command") {
  const Experiment e = TwoWorkers();
  ClusterOptions options;
  options.bin_dir = "/bin";
  auto has_evaluator = [&] {
    const std::vector<std::string> argv =
        ServerCommand(e, PolicyFor("bsp", e).value(), options, "ep", "report");
    return std::find(argv.begin(), argv.end(), "--evaluator") != argv.end();
  };
  CHECK_FALSE(has_evaluator());
  options.evaluator_command = "python3 evaluator.py";
  CHECK(has_evaluator());
}

TEST_CASE("the server is started with --deterministic only when asked") {
  const Experiment e = TwoWorkers();
  ClusterOptions options;
  options.bin_dir = "/bin";
  auto has = [&](std::string_view policy) {
    const std::vector<std::string> argv =
        ServerCommand(e, PolicyFor(policy, e).value(), options, "ep", "report");
    return std::find(argv.begin(), argv.end(), "--deterministic") != argv.end();
  };
  CHECK_FALSE(has("bsp"));
  options.deterministic = true;
  CHECK(has("bsp"));
  CHECK(has("auto"));
  CHECK(has("backup:1"));
}

// Whether `argv` holds `flag` followed by `value` (or `flag` alone).
bool HasFlag(const std::vector<std::string>& argv, const std::string& flag,
             const std::string& value = {}) {
  const auto it = std::find(argv.begin(), argv.end(), flag);
  if (it == argv.end()) return false;
  return value.empty() || (it + 1 != argv.end() && *(it + 1) == value);
}

TEST_CASE("a run's codecs reach the server as --push-codec and --pull-codec, none left out") {
  const Experiment e = TwoWorkers();
  ClusterOptions options;
  options.bin_dir = "/bin";
  const sync::PolicyConfig bsp = PolicyFor("bsp", e).value();
  std::vector<std::string> argv = ServerCommand(e, bsp, options, "ep", "report");
  CHECK_FALSE(HasFlag(argv, "--push-codec"));
  CHECK_FALSE(HasFlag(argv, "--pull-codec"));
  argv = ServerCommand(e, bsp, options, "ep", "report", ParseCodecs("topk:0.01", {}).value());
  CHECK(HasFlag(argv, "--push-codec", "topk:0.01"));
  CHECK_FALSE(HasFlag(argv, "--pull-codec"));
  argv = ServerCommand(e, bsp, options, "ep", "report", ParseCodecs("none/int8", {}).value());
  CHECK_FALSE(HasFlag(argv, "--push-codec"));
  CHECK(HasFlag(argv, "--pull-codec", "int8"));
  argv = ServerCommand(e, bsp, options, "ep", "report", ParseCodecs("fp16/bf16", {}).value());
  CHECK(HasFlag(argv, "--push-codec", "fp16"));
  CHECK(HasFlag(argv, "--pull-codec", "bf16"));
}

TEST_CASE("dssp and sync-switch rows reach the server as its flags") {
  Experiment e = TwoWorkers();
  e.job.max_iterations = 100;
  ClusterOptions options;
  options.bin_dir = "/bin";
  std::vector<std::string> argv =
      ServerCommand(e, PolicyFor("dssp:0:2", e).value(), options, "ep", "report");
  CHECK(HasFlag(argv, "--policy", "dssp"));
  CHECK(HasFlag(argv, "--staleness-low", "0"));
  CHECK(HasFlag(argv, "--staleness-high", "2"));
  argv = ServerCommand(e, PolicyFor("dssp", e).value(), options, "ep", "report");
  CHECK(HasFlag(argv, "--staleness-low", "1"));
  CHECK(HasFlag(argv, "--staleness-high", "4"));
  argv = ServerCommand(e, PolicyFor("sync-switch:0.5", e).value(), options, "ep", "report");
  CHECK(HasFlag(argv, "--policy", "sync-switch"));
  CHECK(HasFlag(argv, "--switch-at", "0.5"));
  argv = ServerCommand(e, PolicyFor("sync-switch:online", e).value(), options, "ep", "report");
  CHECK(HasFlag(argv, "--switch-online"));
  CHECK_FALSE(HasFlag(argv, "--switch-at"));
  // Rows that cannot be run are refused.
  CHECK_FALSE(PolicyFor("dssp:3", e).ok());
  CHECK_FALSE(PolicyFor("dssp:3:1", e).ok());
  CHECK_FALSE(PolicyFor("sync-switch:soon", e).ok());
  CHECK_FALSE(PolicyFor("sync-switch:1.5", e).ok());
  e.job.max_iterations = 0;
  e.job.target_accuracy = 0;
  CHECK_FALSE(PolicyFor("sync-switch", e).ok());  // nothing to place the switch by
  CHECK(PolicyFor("sync-switch:online", e).ok());
}

}  // namespace
}  // namespace dmlps::bench
