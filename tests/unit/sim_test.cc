// The simulator on scenarios whose virtual times can be worked out by hand:
// fixed step costs, fixed latencies, free server work.
#include "dmlps/sim/sim.h"

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "dmlps/bench/run_limits.h"
#include "sim_test_util.h"

namespace dmlps::sim {
namespace {

struct SimFixture {
  data::Dataset train = Separable(512, 1);
  data::Dataset test = Separable(128, 2);

  // n workers under `policy`, each step `step_ms` times the worker's
  // slowdown, messages `latency_ms` apart, nothing else costing time.
  SimConfig Config(const std::string& policy, const std::vector<double>& slowdown, double step_ms,
                   double latency_ms) const {
    SimConfig c = SimJob(policy, static_cast<int64_t>(slowdown.size()), 8);
    c.policy.chunk = 2;
    c.policy.token_size = 2;
    c.job.lr = 0.5;
    c.job.momentum = 0.5;
    c.job.eval_every = 1000;
    c.job.max_iterations = 10;
    for (double k : slowdown) {
      worker::StragglerSpec s;
      s.slowdown = k;
      c.stragglers.push_back(s);
    }
    // The whole step costs step_ms, whatever its size.
    OnlyStepsAndLatency(step_ms * 1e-3, 0, latency_ms * 1e-3, &c);
    return c;
  }

  // ASP on workers of the given slowdowns for 1.005 virtual seconds, steps
  // of 10 ms, no latency.
  SimReport RunAsp(const std::vector<double>& slowdown) const {
    SimConfig c = Config("asp", slowdown, 10, 0);
    c.job.max_iterations = 0;
    c.job.max_seconds = 1.005;
    return Run(c);
  }

  // `policy` on three workers and one 4x slower, steps of 10 ms, 1 ms each
  // way, `local_steps` a push, for `iterations` iterations.
  SimConfig OneSlow(const std::string& policy, int64_t local_steps, int64_t iterations) const {
    SimConfig c = Config(policy, {1, 1, 1, 4}, 10, 1);
    c.policy.local_steps = local_steps;
    c.job.max_iterations = iterations;
    return c;
  }

  SimReport Run(const SimConfig& config) const {
    Result<SimReport> report = Simulate(config, train, test);
    REQUIRE_MESSAGE(report.ok(), report.status().ToString());
    CHECK_MESSAGE(report->failure.empty(), report->failure);
    return std::move(report).value();
  }
};

TEST_CASE("sim: CostModel interpolates its points and extrapolates the last segment") {
  CostModel linear = CostModel::Linear(1e-3, 1e-5);
  CHECK(linear.StepSeconds(100) == doctest::Approx(2e-3));
  CHECK(linear.StepSeconds(5000) == doctest::Approx(1e-3 + 5e-2));
  CHECK(linear.SharedSpeed(100) == 1);

  CostModel table;
  table.steps = {{10, 1.0, 2.0}, {20, 3.0, 3.0}, {40, 5.0, 10.0}};
  CHECK(table.StepSeconds(5) == doctest::Approx(0.5));  // below: in proportion
  CHECK(table.StepSeconds(15) == doctest::Approx(2.0));
  CHECK(table.StepSeconds(30) == doctest::Approx(4.0));
  CHECK(table.StepSeconds(60) == doctest::Approx(7.0));  // beyond: the last slope
  CHECK(table.SharedSpeed(10) == doctest::Approx(0.5));
  CHECK(table.SharedSpeed(20) == doctest::Approx(1.0));
}

TEST_CASE(
    "sim: BSP with fixed speeds: an iteration is the slowest worker's step plus a round trip") {
  SimFixture f;
  // Steps of 10 ms; the slowest worker's takes 30 (slowdown 3); 1 ms each way.
  const SimReport r = f.Run(f.Config("bsp", {1, 1, 2, 3}, 10, 1));
  CHECK(r.iterations == 10);
  CHECK(r.seconds == doctest::Approx(10 * (0.030 + 0.002)));
  // Every worker computed every iteration's 10 ms; only the straggler's slowness differs.
  CHECK(r.workers[0].compute_s == doctest::Approx(0.100));
  CHECK(r.workers[3].straggle_s == doctest::Approx(0.200));
  CHECK(r.compute_ratio_min == doctest::Approx(0.100 / r.seconds));
  CHECK(r.compute_ratio_mean < 1);
}

TEST_CASE("sim: ASP throughput is the sum of the workers' rates") {
  SimFixture f;
  const SimReport r = f.RunAsp({1, 2});
  // 100 steps/s and 50 steps/s, nobody waiting.
  CHECK(r.workers[0].steps == 100);
  CHECK(r.workers[1].steps == 50);
  CHECK(r.iterations == 75);  // pushes / N
  CHECK(r.wait_share == doctest::Approx(0).epsilon(1e-9));
}

TEST_CASE("sim: staleness per push: none under BSP; under ASP what the others applied meanwhile") {
  SimFixture f;
  const SimReport asp = f.RunAsp({1, 4});
  // In the slow worker's 40 ms step the fast one pushes 4 times; in the fast
  // one's 10 ms step the slow one pushes a quarter of the time.
  REQUIRE(asp.workers[1].steps > 0);
  const double slow = asp.workers[1].staleness_sum / static_cast<double>(asp.workers[1].steps);
  const double fast = asp.workers[0].staleness_sum / static_cast<double>(asp.workers[0].steps);
  CHECK(slow >= 3);
  CHECK(slow <= 5);
  CHECK(fast <= 0.5);
  const SimReport bsp = f.Run(f.Config("bsp", {1, 4}, 10, 0));
  for (const WorkerStats& w : bsp.workers) CHECK(w.staleness_sum == 0);
}

TEST_CASE("sim: backup:1 with one slow worker: an iteration takes the second slowest's step") {
  SimFixture f;
  SimConfig c = f.Config("backup", {1, 1, 2, 10}, 10, 1);
  c.policy.backup = 1;
  const SimReport r = f.Run(c);
  CHECK(r.iterations == 10);
  CHECK(r.seconds == doctest::Approx(10 * (0.020 + 0.002)));
  // The slow worker's pushes all arrive after their round closed.
  CHECK(r.wasted_samples > 0);
  CHECK(r.wasted_samples == r.workers[3].samples);
}

TEST_CASE("sim: WBSP: a round takes the slowest worker's step and the fast ones never wait") {
  SimFixture f;
  // The slow worker's step is 35.5 ms; the fast ones step every 10 ms meanwhile.
  const SimReport r = f.Run(f.Config("wbsp", {1, 1, 1, 3.55}, 10, 0));
  CHECK(r.iterations == 10);
  CHECK(r.seconds == doctest::Approx(10 * 0.0355));
  CHECK(r.workers[3].steps == 10);
  CHECK(r.workers[0].steps == 35);
  CHECK(r.workers[0].wait_s == doctest::Approx(0).epsilon(1e-9));
  CHECK(r.compute_ratio_min > 0.98);
}

TEST_CASE(
    "sim: A-BSP: the straggler stops after the chunk it is in when the first worker is done") {
  SimFixture f;
  // Batches of 8 in chunks of 2 at 2.5 ms a chunk: the fast worker's batch
  // takes 10 ms; the 3x-slow worker's chunks end at 7.5 and 15 ms, and it
  // hears SyncNow at 10 ms, in its second chunk.
  SimConfig c = f.Config("abps", {1, 3}, 10, 0);
  c.cost = CostModel::Linear(0, 10e-3 / 8);
  c.cost.param_s = c.cost.message_s = 0;
  const SimReport r = f.Run(c);
  CHECK(r.iterations == 10);
  CHECK(r.seconds == doctest::Approx(10 * 0.015));
  CHECK(r.workers[0].samples == 10 * 8);
  CHECK(r.workers[1].samples == 10 * 4);
}

TEST_CASE("sim: shared cores: two workers computing at once on one core take twice as long") {
  SimFixture f;
  SimConfig c = f.Config("bsp", {1, 1}, 10, 1);
  c.shared_cores = 1;
  const SimReport r = f.Run(c);
  CHECK(r.seconds == doctest::Approx(10 * (0.020 + 0.002)));
  c.shared_cores = 2;
  CHECK(f.Run(c).seconds == doctest::Approx(10 * (0.010 + 0.002)));
}

TEST_CASE("sim: the network model: bandwidth, and links that carry one message at a time") {
  SimFixture f;
  SimConfig c = f.Config("bsp", {1, 1}, 10, 0);
  // softmax on 4 features, 2 classes: 10 parameters, 40 bytes and a header,
  // so a push or a model takes 1 ms on the wire and a pull 0.71 ms.
  c.network.link_gbps = (40 + 96) * 8 / 1e9 / 1e-3;
  const SimReport r = f.Run(c);
  // A round from the first model's arrival T: worker 0 computes to T+10 and
  // pushes (T+11), then pulls (T+11.71); worker 1, whose model came 1 ms
  // later behind worker 0's on the server's link, pushes once the server's
  // link is free (T+12.71) and closes the round; the model takes 1 ms more.
  CHECK(r.seconds > 10 * 0.0135);
  CHECK(r.seconds < 10 * 0.0140);
}

TEST_CASE("sim: on shared cores with cores_copy, messages are CPU work that slows compute") {
  SimFixture f;
  SimConfig c = f.Config("bsp", {1, 1}, 10, 0);
  c.shared_cores = 1;
  c.network.link_gbps = (40 + 96) * 8 / 1e9 / 1e-3;  // a push or a model: 1 ms of copying
  c.network.cores_copy = true;
  c.job.max_iterations = 10;
  const double ten = f.Run(c).seconds;
  c.job.max_iterations = 20;
  const double twenty = f.Run(c).seconds;
  // One core does everything, each pair at once at half speed: the two
  // steps (2 x 10 ms), the two pushes (2 x 1 ms), the two pulls queued
  // behind them on each connection (2 x 0.71 ms), then the two models.
  CHECK((twenty - ten) / 10 ==
        doctest::Approx(0.020 + 0.002 + 2 * 0.096 / 0.136 * 1e-3 + 0.002).epsilon(1e-6));
  // On wires of their own the copies would cost the core nothing.
  c.network.cores_copy = false;
  c.job.max_iterations = 10;
  const double wired = f.Run(c).seconds;
  c.job.max_iterations = 20;
  CHECK((f.Run(c).seconds - wired) / 10 < 0.0245);
}

TEST_CASE("sim: the same seed gives the same run; another noise seed another one") {
  SimFixture f;
  SimConfig c = f.Config("ssp", {1, 1, 1, 3}, 10, 1);
  c.policy.staleness = 2;
  c.job.max_iterations = 30;
  c.job.eval_every = 5;
  c.noise.assign(4, Noise{0.5, 3});
  for (worker::StragglerSpec& s : c.stragglers) {
    s.delay_prob = 0.2;
    s.delay = std::chrono::microseconds(5000);
  }
  const SimReport a = f.Run(c);
  const SimReport b = f.Run(c);
  CHECK(a.seconds == b.seconds);
  CHECK(a.events == b.events);
  REQUIRE(a.curve.size() == b.curve.size());
  for (size_t i = 0; i < a.curve.size(); ++i) CHECK(a.curve[i].accuracy == b.curve[i].accuracy);
  c.noise_seed = 7;
  CHECK(f.Run(c).seconds != a.seconds);
}

TEST_CASE("sim: the threads computing the gradients change nothing in the results") {
  SimFixture f;
  for (const char* policy : {"bsp", "backup", "abps", "ssp", "token"}) {
    CAPTURE(policy);
    SimConfig c = f.Config(policy, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3}, 10, 1);
    c.policy.backup = 1;
    c.job.eval_every = 2;
    c.job.max_iterations = 20;
    c.noise.assign(12, Noise{0.3, 0});
    const SimReport one = f.Run(c);
    c.threads = 2;
    const SimReport two = f.Run(c);
    CHECK(one.seconds == two.seconds);
    CHECK(one.events == two.events);
    CHECK(one.samples == two.samples);
    REQUIRE(one.curve.size() == two.curve.size());
    for (size_t i = 0; i < one.curve.size(); ++i) {
      // Bit for bit: the same losses, not merely close ones.
      CHECK(one.curve[i].loss == two.curve[i].loss);
      CHECK(one.curve[i].accuracy == two.curve[i].accuracy);
    }
  }
}

TEST_CASE("sim: sharded, each shard's link carries its slice and the math is the same") {
  SimFixture f;
  // 64 workers whose steps take 0.1 ms, a model of 3586 parameters (14.4
  // KB a push or model) on 1 Gbit/s links: 115 us a message, so the
  // server's links carry 64 pushes and 64 models an iteration and decide.
  SimConfig c = f.Config("bsp", std::vector<double>(64, 1), 0.1, 0.01);
  c.model = *model::ParseModelSpec("mlp:512", 4, 2);
  c.network.link_gbps = 1;
  c.job.eval_every = 5;
  const SimReport one = f.Run(c);
  CHECK(one.seconds / 10 > 64 * 115e-6);
  c.shards = 1;
  CHECK(f.Run(c).seconds == one.seconds);
  c.shards = 4;
  const SimReport four = f.Run(c);
  // Each shard's links carry a quarter of each push and model (897 of 3586
  // parameters, plus the header); shard 0 sends the others its orders, and
  // each worker's own link still carries the whole model: not quite 4x.
  CHECK(four.seconds < one.seconds / 2.5);
  CHECK(four.seconds > one.seconds / 4);
  // The slices together hold what the one server held: the same updates.
  CHECK(four.iterations == one.iterations);
  REQUIRE(four.curve.size() == one.curve.size());
  for (size_t i = 0; i < one.curve.size(); ++i) CHECK(four.curve[i].loss == one.curve[i].loss);
  // Dropped pushes are discarded on every shard, and the run goes on.
  c.policy.name = "backup";
  c.policy.backup = 2;
  c.stragglers.back().slowdown = 4;
  const SimReport backup = f.Run(c);
  CHECK(backup.iterations == 10);
  CHECK(backup.dropped_pushes > 0);
}

TEST_CASE("sim: by default a message costs shard 0 30 us, as measured on real shards") {
  SimFixture f;
  // 128 workers, free steps and links: an iteration is shard 0's work, a
  // push and a pull of every worker at message_s each (whatever the shards:
  // every shard gets each worker's push slice, shard 0 its pull too).
  CHECK(CostModel{}.message_s == 30e-6);
  SimConfig c = f.Config("bsp", std::vector<double>(128, 1), 0, 0);
  c.cost.message_s = CostModel{}.message_s;
  const double per_iteration = 2 * 128 * 30e-6;
  CHECK(f.Run(c).seconds / 10 == doctest::Approx(per_iteration).epsilon(0.02));
  c.shards = 4;
  CHECK(f.Run(c).seconds / 10 == doctest::Approx(per_iteration).epsilon(0.02));
}

TEST_CASE("sim: the gradients are real: every policy learns the separable problem") {
  SimFixture f;
  for (const char* policy : {"bsp", "asp", "ssp", "backup", "wbsp", "wbsp-overlap", "abps", "lbbsp",
                             "token", "localsgd", "async-localsgd"}) {
    CAPTURE(policy);
    SimConfig c = f.Config(policy, {1, 1, 1, 4}, 10, 1);
    c.job.max_iterations = 0;
    c.job.max_seconds = 60;
    c.job.target_accuracy = 0.9;
    c.job.eval_every = 5;
    const SimReport r = f.Run(c);
    CHECK(r.reached);
    CHECK(r.curve.front().accuracy < 0.9);
    CHECK(r.curve.back().accuracy >= 0.9);
    CHECK(r.seconds_to_target > 0);
    const bench::RunResult row = ToRunResult(r, policy, 1);
    CHECK(row.reached);
    CHECK(row.seconds == r.seconds_to_target);
    CHECK(row.compute_ratio_mean >= 0);
    CHECK(row.compute_ratio_mean <= 1);
  }
}

TEST_CASE("sim: a switching run's row lists the policies it ran, each to the next switch done") {
  SimReport r;
  r.iterations = 50;
  r.started_under = "bsp";
  sync::Switch to_asp{.from = "bsp", .to = "asp", .iteration = 10, .done = true};
  sync::Switch decided{.from = "asp", .to = "bsp", .iteration = 25, .done = false};
  sync::Switch back{.from = "asp", .to = "bsp", .iteration = 30, .done = true};
  sync::Switch late{.from = "bsp", .to = "asp", .iteration = 60, .done = true};
  r.switches = {{1, to_asp}, {2, decided}, {3, back}, {4, late}};
  const bench::RunResult row = ToRunResult(r, "auto", 1);
  REQUIRE(row.ran_under.size() == 3);
  CHECK(row.ran_under[0].policy == "bsp");
  CHECK(row.ran_under[0].iterations == 10);
  CHECK(row.ran_under[1].policy == "asp");
  CHECK(row.ran_under[1].iterations == 20);
  CHECK(row.ran_under[2].policy == "bsp");
  CHECK(row.ran_under[2].iterations == 20);
  r.started_under.clear();
  r.switches.clear();
  CHECK(ToRunResult(r, "bsp", 1).ran_under.empty());
}

TEST_CASE("sim: token: a round-robin straggler sleeps once an iteration, not once a token") {
  // 16 tokens an iteration (batch 8, tokens of 2, 4 workers): each worker
  // trains several, but in iteration t only rank t mod 4 sleeps, once.
  SimFixture f;
  SimConfig c = f.Config("token", {1, 1, 1, 1}, 1, 0);
  for (worker::StragglerSpec& s : c.stragglers) s.round_robin = std::chrono::milliseconds(40);
  c.job.max_iterations = 20;
  const SimReport r = f.Run(c);
  for (const WorkerStats& w : r.workers) {
    CHECK(w.steps > 20);  // tokens
    CHECK(w.straggle_s == doctest::Approx(5 * 0.040));
  }
}

TEST_CASE(
    "sim: sync-switch's switch is reported with its virtual time, once decided and once done") {
  // Without a target, --switch-at 0.5 of 20 iterations switches BSP -> ASP at
  // iteration 10 (docs/algorithms.md, Sync-Switch). A BSP round here is the
  // 4x worker's 40 ms step and two 1 ms messages.
  SimFixture f;
  SimConfig c = f.Config("sync-switch", {1, 1, 1, 4}, 10, 1);
  c.job.max_iterations = 20;
  c.policy.switch_at = 0.5;
  const SimReport r = f.Run(c);
  REQUIRE(r.switches.size() == 2);
  const SimSwitch& decided = r.switches[0];
  const SimSwitch& done = r.switches[1];
  CHECK_FALSE(decided.change.done);
  CHECK(done.change.done);
  for (const SimSwitch& s : r.switches) {
    CHECK(s.change.from == "bsp");
    CHECK(s.change.to == "asp");
  }
  CHECK(decided.change.iteration == 10);
  CHECK(done.change.iteration >= decided.change.iteration);
  CHECK(decided.seconds == doctest::Approx(10 * 0.042).epsilon(0.1));
  CHECK(done.seconds >= decided.seconds);
  CHECK(r.iterations >= 20);
}

TEST_CASE("sim: bad settings are refused") {
  SimFixture f;
  SimConfig c = f.Config("bsp", {1, 1}, 10, 1);
  c.stragglers.pop_back();
  CHECK(Simulate(c, f.train, f.test).status().code() == StatusCode::kInvalidArgument);
  c = f.Config("bsp", {1, 1}, 10, 1);
  c.noise.assign(2, Noise{0, 0.5});
  CHECK_FALSE(ValidateSimConfig(c).empty());
  c = f.Config("bsp", std::vector<double>(600, 1), 10, 1);  // more workers than samples
  CHECK(Simulate(c, f.train, f.test).status().code() == StatusCode::kInvalidArgument);
  c = f.Config("nope", {1, 1}, 10, 1);
  CHECK_FALSE(ValidateSimConfig(c).empty());
  c = f.Config("bsp", {1, 1}, 10, 1);
  c.threads = 0;
  CHECK_FALSE(ValidateSimConfig(c).empty());
  c = f.Config("bsp", {1, 1}, 10, 1);
  c.shards = 11;  // softmax on 4 features, 2 classes: 10 parameters
  CHECK(ValidateSimConfig(c) ==
        std::vector<std::string>{"more server shards than the model has parameters"});
  c.shards = 0;
  CHECK_FALSE(ValidateSimConfig(c).empty());
  c = f.Config("bsp", {1, 1}, 10, 1);
  c.job.max_iterations = 0;
  CHECK(ValidateSimConfig(c) ==
        std::vector<std::string>{"no end to a run: give a target, max_iterations or max_seconds"});
  c = f.Config("bsp", {1, 1}, 10, 1);
  c.shared_cores = 1;
  c.cpu_wake_credit_s = 0.006;
  CHECK(ValidateSimConfig(c) == std::vector<std::string>{"a wake-up credit needs a CPU slice"});
  c.cpu_slice_s = 0.003;
  CHECK(ValidateSimConfig(c).empty());
  c.cpu_wake_credit_s = -1;
  CHECK(ValidateSimConfig(c) ==
        std::vector<std::string>{"the wake-up credit must be a finite time, not negative"});
}

TEST_CASE("sim: a run's limits out of range, or none set, are named as the caller names them") {
  const bench::RunLimitNames names = {"--t", "--e", "--i", "--s", "no end"};
  std::vector<std::string> problems;
  bench::CheckRunLimits({.target = 1.5, .eval_every = 0, .max_iterations = -1, .max_seconds = -1},
                        names, &problems);
  CHECK(problems == std::vector<std::string>{"--t must be in [0, 1]", "--e must be at least 1",
                                             "--i must not be negative",
                                             "--s must not be negative"});
  problems.clear();
  bench::CheckRunLimits({.target = 0, .eval_every = 5}, names, &problems);
  CHECK(problems == std::vector<std::string>{"no end"});
  problems.clear();
  bench::CheckRunLimits({.target = 0.9, .eval_every = 5}, names, &problems);
  CHECK(problems.empty());
}

TEST_CASE("sim: localsgd with H = 1, outer lr 1 and no momentum trains as BSP does") {
  // docs/algorithms-local-sgd.md, "Local SGD": the same seed gives the same model up to
  // float rounding. Not bit for bit: the worker sends θ − (θ − lr·g), which
  // rounds differently from the lr·g the server multiplies out under BSP.
  SimFixture f;
  SimConfig bsp = f.Config("bsp", {1, 1, 1, 4}, 10, 1);
  bsp.job.momentum = 0;
  bsp.job.max_iterations = 40;
  bsp.job.eval_every = 5;
  SimConfig local = bsp;
  local.policy.name = "localsgd";
  local.policy.local_steps = 1;
  local.policy.outer_lr = 1;
  local.policy.outer_momentum = 0;
  const SimReport a = f.Run(bsp);
  const SimReport b = f.Run(local);
  REQUIRE(a.curve.size() == b.curve.size());
  CHECK(a.curve.size() >= 8);
  for (size_t i = 0; i < a.curve.size(); ++i) {
    CAPTURE(i);
    CHECK(a.curve[i].iteration == b.curve[i].iteration);
    CHECK(a.curve[i].samples == b.curve[i].samples);
    CHECK(b.curve[i].loss == doctest::Approx(a.curve[i].loss).epsilon(1e-5));
    CHECK(b.curve[i].accuracy == doctest::Approx(a.curve[i].accuracy).epsilon(1e-9));
  }
  // With the defaults (H = 8) the model differs.
  local.policy = bsp.policy;
  local.policy.name = "localsgd";
  CHECK(f.Run(local).curve.back().loss != doctest::Approx(a.curve.back().loss).epsilon(1e-5));
}

TEST_CASE("sim: localsgd prices H local steps, one push and one pull per round") {
  SimFixture f;
  const SimReport r = f.Run(f.OneSlow("localsgd", 4, 10));
  // A round: the straggler's 4 steps of 40 ms, its push and the model back.
  CHECK(r.seconds == doctest::Approx(10 * (4 * 0.040 + 0.002)).epsilon(0.01));
  for (const WorkerStats& w : r.workers) {
    CHECK(w.steps == 10);  // pushes, one per round
    CHECK(w.samples == 10 * 4 * 8);
  }
  // The fast workers wait 3/4 of every round; the straggler hardly at all.
  CHECK(r.workers[0].wait_s == doctest::Approx(10 * 3 * 0.040).epsilon(0.05));
  CHECK(r.workers[3].wait_s < 0.05);
  // One push per round, carrying the model's 10 parameters: a quarter of
  // what BSP sends in the same 40 steps, one push each.
  CHECK(r.bytes_per_worker > 10 * 4 * 10);
  SimConfig bsp = f.Config("bsp", {1, 1, 1, 4}, 10, 1);
  bsp.job.max_iterations = 40;
  CHECK(f.Run(bsp).bytes_per_worker == doctest::Approx(4 * r.bytes_per_worker).epsilon(0.15));
}

TEST_CASE("sim: async-localsgd with DyLU: the 4x slower worker takes H/4 steps per push") {
  SimFixture f;
  SimConfig c = f.OneSlow("async-localsgd", 8, 60);
  const SimReport plain = f.Run(c);
  // Without DyLU every push is 8 steps: the slow worker pushes a quarter as often.
  CHECK(plain.workers[3].samples == plain.workers[3].steps * 8 * 8);
  CHECK(plain.workers[0].steps >= 3 * plain.workers[3].steps);
  c.policy.dylu = true;
  const SimReport dylu = f.Run(c);
  // With it, after its first push of 8 steps it takes 2: about as many
  // pushes as the fast workers, a quarter of their samples.
  CHECK(dylu.workers[3].samples == (8 + (dylu.workers[3].steps - 1) * 2) * 8);
  CHECK(dylu.workers[3].steps >= dylu.workers[0].steps * 8 / 10);
  CHECK(dylu.workers[0].samples == dylu.workers[0].steps * 8 * 8);
  // Nobody waits under either.
  for (const WorkerStats& w : dylu.workers) CHECK(w.wait_s < 0.05 * dylu.seconds);
}

}  // namespace
}  // namespace dmlps::sim
