// LB-BSP in the simulator when a worker's link is cut: the simulated workers
// report how long their pushes took to send (PushInfo::comm_s, cycle_s), as
// dmlps-worker and the server do, so LB-BSP sees a slow link as a slow
// worker and moves samples off it (docs/algorithms-stragglers.md, "LB-BSP").
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "dmlps/sim/sim.h"
#include "sim_test_util.h"

namespace dmlps::sim {
namespace {

constexpr int64_t kCut = 150;  // the iteration worker 3's link drops

struct LbbspFixture {
  data::Dataset train = Separable(1024, 1);
  data::Dataset test = Separable(128, 2);

  // 4 workers, batch 32 each, a step of b samples 0.5 ms + 0.1 ms a sample
  // (3.7 ms at 32), pushes weighing 100 kB (25,000 parameters' worth) on
  // unlimited links; from iteration kCut worker 3 sends at 200 Mb/s, so its
  // push takes 4 ms, about a step.
  SimConfig Config(const std::string& policy, const std::string& mode) const {
    SimConfig c = SimJob(policy, 4, 32);
    c.policy.lb_mode = mode;
    c.payload_params = 25000;
    c.job.lr = 0.5;
    c.job.momentum = 0.5;
    c.job.eval_every = 1000;
    c.stragglers.assign(4, worker::StragglerSpec{});
    c.stragglers[3].bandwidth_schedule = {{kCut, 200}};
    OnlyStepsAndLatency(0.5e-3, 0.1e-3, 50e-6, &c);
    return c;
  }

  SimReport Run(SimConfig config, int64_t iterations) const {
    config.job.max_iterations = iterations;
    Result<SimReport> report = Simulate(config, train, test);
    REQUIRE_MESSAGE(report.ok(), report.status().ToString());
    REQUIRE_MESSAGE(report->failure.empty(), report->failure);
    return std::move(report).value();
  }

  // Worker 3's mean batch over iterations [from, to): the samples it pushed
  // by the end of a run of `to` iterations less those by the end of one of
  // `from` (a shorter run is the longer one's beginning).
  double MeanBatch(const SimConfig& config, int64_t from, int64_t to) const {
    const WorkerStats a = Run(config, from).workers[3];
    const WorkerStats b = Run(config, to).workers[3];
    REQUIRE(b.steps > a.steps);
    return static_cast<double>(b.samples - a.samples) / static_cast<double>(b.steps - a.steps);
  }
};

TEST_CASE("sim: LB-BSP sees a cut link: the worker's batch goes down and it beats BSP") {
  LbbspFixture f;
  const double bsp = f.Run(f.Config("bsp", "cpu"), kCut + 250).seconds;
  for (const char* mode : {"cpu", "gpu"}) {
    CAPTURE(mode);
    const SimConfig c = f.Config("lbbsp", mode);
    const double before = f.MeanBatch(c, kCut - 50, kCut);
    const double after = f.MeanBatch(c, kCut + 50, kCut + 100);
    CAPTURE(before);
    CAPTURE(after);
    CHECK(before > 0.8 * 32);  // balanced while every link is equal
    CHECK(after < 0.8 * before);
    const SimReport lbbsp = f.Run(c, kCut + 250);
    CHECK(lbbsp.seconds < bsp);
    // What the workers tell the policy changes nothing between thread counts.
    SimConfig two = c;
    two.threads = 2;
    const SimReport again = f.Run(two, kCut + 250);
    CHECK(again.seconds == lbbsp.seconds);
    CHECK(again.events == lbbsp.events);
    CHECK(again.workers[3].samples == lbbsp.workers[3].samples);
  }
}

}  // namespace
}  // namespace dmlps::sim
