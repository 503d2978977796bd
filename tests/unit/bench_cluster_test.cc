// What dmlps-bench run gives a user's worker command: the worker's details
// and its straggler profile in the forms dmlps-worker and dmlps.Worker take,
// and the server's --evaluator when an evaluator command runs.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "dmlps/bench/cluster.h"

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
  e.workers = 2;
  e.stragglers.assign(2, worker::StragglerSpec{});
  e.stragglers[1].slowdown = 4;
  e.stragglers[1].delay = std::chrono::milliseconds(5);
  e.stragglers[1].schedule = {{0, 1}, {150, 4}};
  e.seed = 7;
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
    const std::vector<std::string> argv = ServerCommand(e, "bsp", options, "ep", "report");
    return std::find(argv.begin(), argv.end(), "--evaluator") != argv.end();
  };
  CHECK_FALSE(has_evaluator());
  options.evaluator_command = "python3 evaluator.py";
  CHECK(has_evaluator());
}

}  // namespace
}  // namespace dmlps::bench
