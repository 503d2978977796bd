// The profile advise measures from generated traces: each worker's
// steady pace, delays and core share, delays taking turns, a link capped
// or held up, the links' bandwidth; trace files and their errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "advise_test_util.h"
#include "dmlps/advise/advisor.h"
#include "dmlps/advise/trace_profile.h"
#include "dmlps/trace/trace.h"
#include "test_util.h"

namespace dmlps::advise {
namespace {

using fixtures::Even;
using fixtures::Find;
using fixtures::MustAdvise;

trace::Record Span(std::string node, std::string lane, std::string name, int64_t t, int64_t dur,
                   trace::Args args) {
  trace::Record r;
  r.time_us = t;
  r.node = std::move(node);
  r.lane = std::move(lane);
  r.kind = "span";
  r.name = std::move(name);
  r.dur_us = dur;
  r.args = std::move(args);
  return r;
}

trace::Record Instant(std::string name, int64_t t, trace::Args args) {
  trace::Record r = Span("server-0", "run", std::move(name), t, 0, std::move(args));
  r.kind = "instant";
  return r;
}

// One BSP step of `node` from `t` (microseconds): computing `compute`,
// then pausing `straggle` (none at 0), pushing a model for `push`, and
// waiting for the next until `cycle` after `t`.
void AddStep(std::vector<trace::Record>* records, const std::string& node, int64_t clock, int64_t t,
             int64_t compute, int64_t straggle, int64_t push, int64_t cycle) {
  records->push_back(
      Span(node, "compute", "step", t, compute, {{"clock", clock}, {"samples", int64_t{256}}}));
  if (straggle > 0) {
    records->push_back(
        Span(node, "compute", "straggle", t + compute, straggle, {{"clock", clock}}));
  }
  const int64_t sent = t + compute + straggle + push;
  records->push_back(Span(node, "comm", "push", sent - push, push,
                          {{"clock", clock}, {"bytes", int64_t{407080}}}));
  records->push_back(Span(node, "wait", "pull", sent, t + cycle - sent, {{"clock", clock}}));
}

// What MeasureRun reads from `records`; fails the test when it cannot.
MeasuredRun MustMeasure(const std::vector<trace::Record>& records) {
  Result<MeasuredRun> run = MeasureRun(records);
  REQUIRE_MESSAGE(run.ok(), run.status().message());
  return std::move(run).value();
}

// A BSP run of 100 iterations: worker-3 4x slow (10 ms steps, 30 ms
// straggle), worker-1 held up 20 ms in every fifth step.
std::vector<trace::Record> GeneratedRun() {
  std::vector<trace::Record> records;
  records.push_back(Instant("start", 0, {{"policy", "bsp"}, {"workers", int64_t{4}}}));
  for (int64_t clock = 0; clock < 100; ++clock) {
    const int64_t t = 1000 + clock * 45000;
    for (int64_t w = 0; w < 4; ++w) {
      const std::string node = "worker-" + std::to_string(w);
      int64_t straggle = w == 3 ? 30000 : 0;
      if (w == 1 && clock % 5 == 4) straggle = 20000;
      // Every cycle takes 45 ms: the fast workers wait for the straggler,
      // which waits 4 ms for its model.
      AddStep(&records, node, clock, t, 10000, straggle, 1000, 45000);
    }
    trace::Record acc =
        Span("server-0", "counter", "accuracy", t, 0,
             {{"value", 0.5 + 0.004 * static_cast<double>(clock)}, {"iteration", clock}});
    acc.kind = "counter";
    if (clock % 10 == 0) records.push_back(acc);
  }
  records.push_back(Instant("end", 4600000, {{"seconds", 4.5}, {"iterations", int64_t{100}}}));
  return records;
}

// A BSP run of 200 iterations on four workers, each step computing 10-13
// ms (drawn) and, in four rounds of five, one worker's step then pausing
// 50 ms: each worker one step in five. A round's last push waits for its
// model 2 ms, the round trip.
std::vector<trace::Record> DelayedRun() {
  std::vector<trace::Record> records;
  records.push_back(Instant("start", 0, {{"policy", "bsp"}, {"workers", int64_t{4}}}));
  std::mt19937 draw(7);
  std::uniform_int_distribution<int64_t> extra(0, 3000);
  int64_t t = 1000;
  for (int64_t clock = 0; clock < 200; ++clock) {
    std::vector<int64_t> computes(4), done(4);
    for (int64_t w = 0; w < 4; ++w) {
      computes[w] = 10000 + extra(draw);
      done[w] = computes[w] + ((clock * 7 + w * 3) % 5 == 0 ? 50000 : 0);
    }
    const int64_t round = *std::max_element(done.begin(), done.end()) + 2000;
    for (int64_t w = 0; w < 4; ++w) {
      const std::string node = "worker-" + std::to_string(w);
      AddStep(&records, node, clock, t, computes[w], done[w] - computes[w], 100, round);
    }
    t += round;
  }
  records.push_back(Instant(
      "end", t, {{"seconds", static_cast<double>(t) * 1e-6}, {"iterations", int64_t{200}}}));
  return records;
}

TEST_CASE("advise: under delays each worker reads its rate, and the link its undelayed rounds") {
  const MeasuredRun run = MustMeasure(DelayedRun());
  const ClusterProfile& p = run.profile;
  REQUIRE(p.workers.size() == 4);
  for (const WorkerProfile& w : p.workers) {
    CHECK(w.delay_prob == doctest::Approx(0.2).epsilon(0.1));
    CHECK(w.delay_s == doctest::Approx(0.050).epsilon(0.1));
  }
  // Each worker waits for another's delay in three rounds of five, so
  // that its median wait is a delay (read as the link: 0.16 Gbit/s); its
  // waits as the last of a round, 2 ms, give some 5 Gbit/s.
  CHECK(p.link_gbps > 2);
}

TEST_CASE("advise: a run's traces give each worker's steady pace, delays and the model's size") {
  const MeasuredRun run = MustMeasure(GeneratedRun());
  const ClusterProfile& p = run.profile;
  CHECK(run.policy == "bsp");
  CHECK(run.IterationSeconds() == doctest::Approx(0.045));
  CHECK(run.IterationsTo(0.8) == 80);
  CHECK(run.IterationsTo(0.99) == 0);
  CHECK(p.batch == 256);
  CHECK(p.num_params == 101770);
  REQUIRE(p.workers.size() == 4);
  CHECK(p.workers[0].step_s == doctest::Approx(0.010));
  // Time a step's spans leave unaccounted is part of the step.
  CHECK(p.workers[2].step_s == doctest::Approx(0.012).epsilon(0.01));
  // The straggle of every step is a lasting pace, not a delay.
  CHECK(p.workers[3].step_s == doctest::Approx(0.040));
  CHECK(p.workers[3].delay_prob == 0);
  // One step in five held up 20 ms: transient delays.
  CHECK(p.workers[1].step_s == doctest::Approx(0.010));
  CHECK(p.workers[1].delay_prob == doctest::Approx(0.2).epsilon(0.05));
  CHECK(p.workers[1].delay_s == doctest::Approx(0.020));
  // The straggler's 4 ms: two latencies, the server's three passes over the
  // parameters, and its model behind half the round's (2.5 models).
  const double transfer = (0.004 - 2 * 50e-6 - 10e-6 - 3 * 101770 * 1e-9) / 2.5;
  CHECK(p.link_gbps == doctest::Approx(407080 * 8 / transfer / 1e9));
  CHECK(HasSteadyStraggler(p));
}

TEST_CASE("advise: traced waits for a core give each worker's core share") {
  // GeneratedRun's workers, each step's computing half spent waiting for a
  // core (worker 2: a quarter), as a host of two cores for four workers.
  std::vector<trace::Record> records = GeneratedRun();
  for (trace::Record& r : records) {
    if (r.lane == "compute" && r.name == "step") {
      r.args.emplace_back("run_wait_us", r.node == "worker-2" ? int64_t{2500} : int64_t{5000});
    }
  }
  const MeasuredRun run = MustMeasure(records);
  REQUIRE(run.profile.workers.size() == 4);
  const ClusterProfile& p = run.profile;
  CHECK(p.workers[0].core_share == doctest::Approx(0.5));
  CHECK(p.workers[2].core_share == doctest::Approx(0.75));
  CHECK(SharedCores(p) == 2);
  // Each step is the host's work at the typical share times the worker's
  // own slowness: worker 2, waiting less for a core, is no faster, and the
  // 2 ms its spans leave unaccounted, waiting for a core between them, are
  // no slowness of its own; worker 3's sleeps still make it 4x slow and
  // worker 1's transient ones are delays.
  CHECK(p.workers[0].step_s == doctest::Approx(0.010));
  CHECK(p.workers[2].step_s == doctest::Approx(0.010));
  CHECK(p.workers[3].step_s == doctest::Approx(0.040));
  CHECK(p.workers[1].delay_prob == doctest::Approx(0.2).epsilon(0.05));
  CHECK(p.workers[1].delay_s == doctest::Approx(0.020));
  // The same work every step: no jitter.
  CHECK(p.workers[0].jitter == 0);
  // Untimed (older traces): a core each.
  const MeasuredRun plain = MustMeasure(GeneratedRun());
  CHECK(plain.profile.workers[0].core_share == 1);
  CHECK(SharedCores(plain.profile) == 0);
}

TEST_CASE("advise: on shared cores a step's pause counts as its length, not as a factor") {
  // The host's work 10 ms a sample at the typical share. A worker's steps
  // take their slowness times that; one that computed 20 ms (waiting for
  // a core half of it) and then paused 50 ms takes 10 ms and the 50.
  const std::vector<double> even =
      SharedSteps({0.010, 0.012, 0.010, 0.070, 0.010}, {1, 1.2, 1, 3.5, 1}, 0.010);
  REQUIRE(even.size() == 5);
  CHECK(even[1] == doctest::Approx(0.012));
  CHECK(even[3] == doctest::Approx(0.060));
  // A steady straggler's sleeps (4x) are its level; a 50 ms pause beyond
  // them after a 10 ms step is 50 ms more.
  const std::vector<double> slow = SharedSteps({0.040, 0.040, 0.090, 0.040}, {4, 4, 9, 4}, 0.010);
  REQUIRE(slow.size() == 4);
  CHECK(slow[0] == doctest::Approx(0.040));
  CHECK(slow[2] == doctest::Approx(0.090));
}

TEST_CASE("advise: workers all on the server's host share at most its cores, as auto reads") {
  ClusterProfile p = Even();
  p.workers.assign(4, WorkerProfile{.step_s = 0.010, .core_share = 0.75});
  CHECK(SharedCores(p) == 3);
  CHECK(SharedCoresAtMost(p, 2) == 2);
  CHECK(SharedCoresAtMost(p, 8) == 3);
  CHECK(SharedCoresAtMost(p, 0) == 3);
  p.workers.assign(4, WorkerProfile{.step_s = 0.010});  // a core each: not shared
  CHECK(SharedCoresAtMost(p, 2) == 0);
  CHECK(CommonHostCores({2, 4, 2}) == 2);
  CHECK(CommonHostCores({2, 0, 2}) == 0);  // one elsewhere
  CHECK(CommonHostCores({}) == 0);

  // GeneratedRun's workers, each step's computing a quarter spent waiting
  // for a core: their shares add up to 3 cores.
  auto traced = [](std::vector<int64_t> host_cores) {
    std::vector<trace::Record> records = GeneratedRun();
    for (trace::Record& r : records) {
      if (r.lane == "compute" && r.name == "step")
        r.args.emplace_back("run_wait_us", int64_t{2500});
    }
    for (size_t w = 0; w < host_cores.size(); ++w) {
      records.push_back(
          Instant("worker admitted", 1,
                  {{"worker", static_cast<int64_t>(w)}, {"host_cores", host_cores[w]}}));
    }
    return MustMeasure(records);
  };
  MeasuredRun on_host = traced({2, 2, 2, 2});
  CHECK(on_host.host_cores == 2);
  CHECK(on_host.profile.cores == 2);
  CHECK(SharedCores(on_host.profile) == 2);
  CHECK(DescribeProfile(on_host.profile).find("on 2 shared cores") != std::string::npos);
  // One worker elsewhere (0), or one not admitted in the traces: the shares tell.
  for (const std::vector<int64_t>& hosts :
       {std::vector<int64_t>{2, 2, 0, 2}, std::vector<int64_t>{2, 2, 2}}) {
    MeasuredRun run = traced(hosts);
    CHECK(run.host_cores == 0);
    CHECK(run.profile.cores == 0);
    CHECK(SharedCores(run.profile) == 3);
  }
  // A crafted trace's figures count as none.
  std::vector<trace::Record> crafted = GeneratedRun();
  for (const double bad : {std::nan(""), -3.0, 1e300}) {
    crafted.push_back(Instant("worker admitted", 1, {{"worker", bad}, {"host_cores", bad}}));
    crafted.push_back(Instant("worker admitted", 1, {{"worker", int64_t{0}}, {"host_cores", bad}}));
  }
  const MeasuredRun run = MustMeasure(crafted);
  CHECK(run.host_cores == 0);
}

// A BSP run of 100 iterations of 10 ms steps on 4 workers where, in each
// iteration, worker `clock mod 4` sleeps 20 ms (--round-robin-ms 20), or
// with `independent` the same share of sleeps at no pattern.
std::vector<trace::Record> RotatingRun(bool independent) {
  std::vector<trace::Record> records;
  records.push_back(Instant("start", 0, {{"policy", "bsp"}, {"workers", int64_t{4}}}));
  for (int64_t clock = 0; clock < 100; ++clock) {
    const int64_t t = 1000 + clock * 32000;
    for (int64_t w = 0; w < 4; ++w) {
      const std::string node = "worker-" + std::to_string(w);
      const int64_t turn = independent ? (clock * 7 + w * w * 3 + clock / 3) % 4 : clock % 4;
      AddStep(&records, node, clock, t, 10000, turn == w ? 20000 : 0, 500, 32000);
    }
  }
  records.push_back(Instant("end", 3300000, {{"seconds", 3.2}, {"iterations", int64_t{100}}}));
  return records;
}

TEST_CASE("advise: delays taking turns are simulated so; backup, dropping the delayed, wins") {
  const MeasuredRun run = MustMeasure(RotatingRun(false));
  const ClusterProfile& p = run.profile;
  for (const WorkerProfile& w : p.workers) {
    CHECK(w.step_s == doctest::Approx(0.010).epsilon(0.05));
    CHECK(w.delay_prob == doctest::Approx(0.25).epsilon(0.1));
  }
  CHECK(p.rotation_s == doctest::Approx(0.020).epsilon(0.05));
  CHECK(DescribeProfile(p).find("delays taking turns") != std::string::npos);
  AdvisorOptions options;
  options.candidates = {"bsp", "backup:1"};
  const Advice advice = MustAdvise(p, options);
  // BSP waits for the sleeper every iteration, 20 ms; backup:1 never does.
  const Prediction& bsp = Find(advice, "bsp");
  const Prediction& backup = Find(advice, "backup:1");
  CHECK(bsp.iteration_s > 0.028);
  CHECK(backup.iteration_s < 0.8 * bsp.iteration_s);
  CHECK(advice.recommended == "backup:1");

  // The same share of delays at no pattern: each worker's own.
  const MeasuredRun scattered = MustMeasure(RotatingRun(true));
  CHECK(scattered.profile.rotation_s == 0);
  for (const WorkerProfile& w : scattered.profile.workers) CHECK(w.delay_prob > 0.1);
}

TEST_CASE("advise: delays take turns only when each worker's fall on a turn of its own") {
  // Four workers of 20 steps of 10 ms, each held up 20 ms on its own
  // residue of the clock mod 4.
  auto steps = [](const std::function<double(int64_t, int64_t)>& seconds) {
    std::vector<StepTimes> workers(4);
    for (int64_t w = 0; w < 4; ++w) {
      for (int64_t c = 0; c < 20; ++c) {
        workers[w].clocks.push_back(c);
        workers[w].seconds.push_back(seconds(w, c));
      }
    }
    return workers;
  };
  CHECK(RotatingDelay(steps([](int64_t w, int64_t c) { return c % 4 == w ? 0.03 : 0.01; })) ==
        doctest::Approx(0.020));
  // On a busy host whose steps take 3.5 to 15 ms, the same.
  const double noisy = RotatingDelay(steps([](int64_t w, int64_t c) {
    const double level = (c * 7 + w) % 3 == 0 ? 0.015 : 0.0035;
    return c % 4 == w ? level + 0.02 : level;
  }));
  CHECK(noisy > 0.015);
  CHECK(noisy < 0.025);
  // Every worker delayed in the same iterations: correlated, but no rotation.
  CHECK(RotatingDelay(steps([](int64_t, int64_t c) { return c % 4 == 0 ? 0.03 : 0.01; })) == 0);
  // One worker never delayed.
  CHECK(RotatingDelay(
            steps([](int64_t w, int64_t c) { return c % 4 == w && w != 2 ? 0.03 : 0.01; })) == 0);
  // A worker delayed in one of its five turns: a passing delay that fell there.
  CHECK(RotatingDelay(steps([](int64_t w, int64_t c) {
          return c % 4 == w && (w != 1 || c == 1) ? 0.03 : 0.01;
        })) == 0);
  // Delays at random, a third of the steps.
  CHECK(RotatingDelay(steps([](int64_t w, int64_t c) {
          return (c * 7 + w * w * 3 + c / 3) % 4 == w ? 0.03 : 0.01;
        })) == 0);
  const std::vector<StepTimes> one(
      1, steps([](int64_t, int64_t c) { return c % 4 == 0 ? 0.03 : 0.01; })[0]);
  CHECK(RotatingDelay(one) == 0);
}

// A BSP run of 200 iterations of 10 ms steps; from clock 150 worker-3's
// pushes take 19 ms to send, the others' 0.5 ms (--bandwidth-schedule
// 3=150:200 on loopback), and the round waits for them. With
// `waited_for_core`, those pushes' spans say that all but 0.5 ms of it
// their thread waited for a core (run_wait_us).
std::vector<trace::Record> SlowSendsFrom150(bool waited_for_core) {
  std::vector<trace::Record> records;
  records.push_back(Instant("start", 0, {{"policy", "bsp"}, {"workers", int64_t{4}}}));
  for (int64_t clock = 0; clock < 200; ++clock) {
    const int64_t cycle = clock < 150 ? 15000 : 33500;
    const int64_t t = 1000 + (clock < 150 ? clock * cycle : 150 * 15000 + (clock - 150) * cycle);
    for (int64_t w = 0; w < 4; ++w) {
      const std::string node = "worker-" + std::to_string(w);
      records.push_back(
          Span(node, "compute", "step", t, 10000, {{"clock", clock}, {"samples", int64_t{256}}}));
      const bool slow = w == 3 && clock >= 150;
      const int64_t push = slow ? 19000 : 500;
      trace::Args args = {{"clock", clock}, {"bytes", int64_t{407080}}};
      if (waited_for_core) args.push_back({"run_wait_us", slow ? int64_t{18500} : int64_t{0}});
      records.push_back(Span(node, "comm", "push", t + 10000, push, args));
      records.push_back(
          Span(node, "wait", "pull", t + 10000 + push, cycle - 10000 - push, {{"clock", clock}}));
    }
  }
  records.push_back(Instant("end", 4000000, {{"seconds", 4}, {"iterations", int64_t{200}}}));
  return records;
}

TEST_CASE("advise: a link capped mid-run makes its worker a straggler from then on") {
  const MeasuredRun run = MustMeasure(SlowSendsFrom150(false));
  const ClusterProfile& p = run.profile;
  REQUIRE(p.workers.size() == 4);
  CHECK(p.workers[0].step_s == doctest::Approx(0.010).epsilon(0.05));
  // Its level now: the step and the 18.5 ms its pushes take beyond the others'.
  CHECK(p.workers[3].step_s == doctest::Approx(0.0285).epsilon(0.05));
  CHECK(p.workers[3].delay_prob == 0);
  CHECK(HasSteadyStraggler(p));
  AdvisorOptions options;
  options.candidates = {"bsp", "backup:1", "lbbsp"};
  CHECK(MustAdvise(p, options).recommended != "bsp");
}

TEST_CASE("advise: a push held back waiting for a core is no slower link") {
  // The host's contention, not worker-3's link: it stays as fast as the others.
  const MeasuredRun run = MustMeasure(SlowSendsFrom150(true));
  const ClusterProfile& p = run.profile;
  REQUIRE(p.workers.size() == 4);
  CHECK(p.workers[3].step_s == doctest::Approx(p.workers[0].step_s).epsilon(0.05));
  CHECK_FALSE(HasSteadyStraggler(p));
}

TEST_CASE("advise: trace files and folders, and their errors") {
  testing::TempDir dir;
  {
    Result<std::unique_ptr<trace::TraceWriter>> server =
        trace::TraceWriter::Open(dir.File("server.trace"), "server-0");
    REQUIRE(server.ok());
    std::vector<std::unique_ptr<trace::TraceWriter>> workers;
    for (int w = 0; w < 4; ++w) {
      Result<std::unique_ptr<trace::TraceWriter>> writer = trace::TraceWriter::Open(
          dir.File("worker-" + std::to_string(w) + ".trace"), "worker-" + std::to_string(w));
      REQUIRE(writer.ok());
      workers.push_back(std::move(*writer));
    }
    for (const trace::Record& r : GeneratedRun()) {
      trace::TraceWriter& out =
          r.node == "server-0" ? **server : *workers[static_cast<size_t>(r.node.back() - '0')];
      if (r.kind == "span") out.Span(r.lane, r.name, r.time_us, r.dur_us, r.args);
      if (r.kind == "instant") out.Instant(r.lane, r.name, r.time_us, r.args);
      if (r.kind == "counter") {
        out.Counter(r.name, r.time_us, r.Number("value"),
                    {{"iteration", static_cast<int64_t>(r.Number("iteration"))}});
      }
    }
  }
  Result<MeasuredRun> folder = MeasureTraces({dir.path()});
  REQUIRE(folder.ok());
  CHECK(folder->profile.workers.size() == 4);
  CHECK(folder->policy == "bsp");
  CHECK(MeasureTraces({dir.File("nope.trace")}).status().code() != StatusCode::kOk);

  // A --trace-dir of several runs: name them, take none.
  testing::TempDir runs;
  std::filesystem::create_directories(runs.File("bsp-1"));
  std::filesystem::create_directories(runs.File("abps-1"));
  std::filesystem::copy_file(dir.File("server.trace"), runs.File("bsp-1/server.trace"));
  std::filesystem::copy_file(dir.File("server.trace"), runs.File("abps-1/server.trace"));
  Result<MeasuredRun> several = MeasureTraces({runs.path()});
  CHECK(several.status().code() == StatusCode::kInvalidArgument);
  CHECK(several.status().message().find("abps-1, bsp-1") != std::string::npos);
  // The server's trace alone has no steps.
  CHECK(MeasureTraces({dir.File("server.trace")}).status().code() == StatusCode::kDataLoss);
}

}  // namespace
}  // namespace dmlps::advise
