// The simulator's network and processor models on their own, with times
// worked out by hand.
#include <doctest/doctest.h>

#include <utility>
#include <vector>

#include "sim/cpu.h"
#include "sim/network.h"

namespace dmlps::sim {
namespace {

struct Arrival {
  double time = 0;
  int64_t slot = 0;
  bool to_server = false;
};

struct Copying {
  int64_t slot = 0;
  double work = 0;
};

// A network of two workers (nodes 0 and 1; the server is node 2) whose
// links carry 1000 bytes in 1 ms, 0.5 ms one way.
struct Network {
  explicit Network(bool copies_on_cores)
      : network({1000 * 8 / 1e9 / 1e-3, 0.5e-3, copies_on_cores}, 2, copies_on_cores,
                {[this](double time, int64_t slot, bool to_server) {
                   arrivals.push_back({time, slot, to_server});
                 },
                 [this](int64_t slot, double work) {
                   copies.push_back({slot, work});
                 }}) {}

  std::vector<Arrival> arrivals;
  std::vector<Copying> copies;
  SimNetwork network;
};

TEST_CASE("sim network: two messages sharing a link go one after the other") {
  Network n(false);
  REQUIRE(n.network.server_node() == 2);
  // Both workers push to the server at once: the server's link takes the
  // second once the first is through.
  n.network.Send(0, 0, 2, 1000, 7);
  n.network.Send(0, 1, 2, 1000, 8);
  // The server answers worker 0 meanwhile: its sending link is free.
  n.network.Send(0, 2, 0, 500, 9);
  REQUIRE(n.arrivals.size() == 3);
  CHECK(n.arrivals[0].slot == 7);
  CHECK(n.arrivals[0].to_server);
  CHECK(n.arrivals[0].time == doctest::Approx(1.5e-3));
  CHECK(n.arrivals[1].slot == 8);
  CHECK(n.arrivals[1].time == doctest::Approx(2.5e-3));
  CHECK_FALSE(n.arrivals[2].to_server);
  // Worker 0's receiving link is free too.
  CHECK(n.arrivals[2].time == doctest::Approx(1e-3));
  // Worker 0 sends again while its link is still busy with its push.
  n.network.Send(0.5e-3, 0, 2, 1000, 10);
  REQUIRE(n.arrivals.size() == 4);
  CHECK(n.arrivals[3].time == doctest::Approx(3.5e-3));  // behind worker 1's on the server's link
  CHECK(n.copies.empty());
}

TEST_CASE("sim network: copied by the cores, a connection delivers in order") {
  Network n(true);
  n.network.Send(0, 0, 2, 1000, 0);
  n.network.Send(0, 0, 2, 500, 1);   // the same connection: waits for the first
  n.network.Send(0, 2, 0, 1000, 2);  // the other direction: a connection of its own
  REQUIRE(n.copies.size() == 2);
  CHECK(n.copies[0].slot == 0);
  CHECK(n.copies[0].work == doctest::Approx(1e-3));
  CHECK(n.copies[1].slot == 2);
  CHECK(n.arrivals.empty());
  // However long the cores took, the message arrives a latency later and
  // the next on its connection starts.
  n.network.CopyDone(3e-3, 0);
  REQUIRE(n.arrivals.size() == 1);
  CHECK(n.arrivals[0].slot == 0);
  CHECK(n.arrivals[0].to_server);
  CHECK(n.arrivals[0].time == doctest::Approx(3.5e-3));
  REQUIRE(n.copies.size() == 3);
  CHECK(n.copies[2].slot == 1);
  CHECK(n.copies[2].work == doctest::Approx(0.5e-3));
  n.network.CopyDone(4e-3, 2);
  REQUIRE(n.arrivals.size() == 2);
  CHECK_FALSE(n.arrivals[1].to_server);
  CHECK(n.copies.size() == 3);
}

struct Cpu {
  explicit Cpu(int64_t cores, double slice = 0, bool wake_preempts = false, double wake_credit = 0)
      : cpu(cores, {slice, wake_preempts, wake_credit},
            [this](double time, uint64_t generation) { ticks.emplace_back(time, generation); }) {}

  // The last tick asked for falls at `at`: takes it; the jobs done then.
  std::vector<int64_t> TickAt(double at) {
    CHECK(ticks.back().first == doctest::Approx(at));
    return cpu.OnTick(at, ticks.back().second);
  }

  std::vector<std::pair<double, uint64_t>> ticks;
  SimCpu cpu;
};

TEST_CASE("sim cpu: jobs share a core, each at its shared speed while others run") {
  Cpu c(1);
  c.cpu.Start(0, 10, 1.0, 1.0);
  REQUIRE(c.ticks.size() == 1);
  CHECK(c.ticks[0].first == doctest::Approx(1.0));
  // A second job halves the first's share; it runs at half its speed besides.
  c.cpu.Start(0, 11, 1.0, 0.5);
  REQUIRE(c.ticks.size() == 2);
  CHECK(c.ticks[1].first == doctest::Approx(2.0));
  // The first tick is stale now.
  CHECK(c.cpu.OnTick(1.0, c.ticks[0].second).empty());
  CHECK(c.cpu.OnTick(2.0, c.ticks[1].second) == std::vector<int64_t>{10});
  // Alone, the second does its remaining half at full speed.
  REQUIRE(c.ticks.size() == 3);
  CHECK(c.ticks[2].first == doctest::Approx(2.5));
  CHECK(c.cpu.OnTick(2.5, c.ticks[2].second) == std::vector<int64_t>{11});
  CHECK(c.ticks.size() == 3);  // nothing left to run
}

TEST_CASE("sim cpu: on as many cores as jobs, each has a core of its own") {
  Cpu c(2);
  c.cpu.Start(0, 1, 1.0, 1.0);
  c.cpu.Start(0, 2, 1.0, 1.0);
  REQUIRE(c.ticks.size() == 2);
  CHECK(c.ticks[1].first == doctest::Approx(1.0));
  // Both finish together, in the order they started.
  CHECK(c.cpu.OnTick(1.0, c.ticks[1].second) == std::vector<int64_t>{1, 2});
}

TEST_CASE("sim cpu: time slices give one job a whole core, in turn") {
  // One core, slices of 1 s; two jobs of 1.5 s each, the second at half its
  // speed while both are on cores (never here: one core runs one job).
  Cpu c(1, 1.0);
  c.cpu.Start(0, 10, 1.5, 0.5);
  c.cpu.Start(0, 11, 1.5, 0.5);
  // Job 10 has the core until its slice ends at 1 s.
  REQUIRE(c.ticks.size() == 2);
  CHECK(c.ticks[1].first == doctest::Approx(1.0));
  CHECK(c.cpu.OnTick(1.0, c.ticks[1].second).empty());
  // Then job 11 for a slice; job 10 waits with 0.5 s left.
  CHECK(c.TickAt(2.0).empty());
  // Job 10 finishes its half second, then job 11 its own.
  CHECK(c.TickAt(2.5) == std::vector<int64_t>{10});
  CHECK(c.TickAt(3.0) == std::vector<int64_t>{11});
}

TEST_CASE("sim cpu: a job that starts waits ahead of one whose slice ended") {
  Cpu c(1, 1.0);
  c.cpu.Start(0, 1, 3.0, 1.0);
  c.cpu.Start(0, 2, 3.0, 1.0);
  CHECK(c.cpu.OnTick(1.0, c.ticks.back().second).empty());  // 1 waits, 2 runs
  c.cpu.Start(1.5, 3, 0.25, 1.0);                           // wakes while 2 runs
  CHECK(c.TickAt(2.0).empty());                             // 2's slice still ends at 2
  // Job 3 goes before job 1, which has waited longer: done at 2.25.
  CHECK(c.TickAt(2.25) == std::vector<int64_t>{3});
}

TEST_CASE("sim cpu: preempting on wake-up, a job that starts takes a core at once") {
  // Two cores, slices of 1 s: jobs 1 and 2 run; 3 starts at 0.5 s.
  Cpu c(2, 1.0, true);
  c.cpu.Start(0, 1, 3.0, 1.0);
  c.cpu.Start(0.25, 2, 3.0, 1.0);
  c.cpu.Start(0.5, 3, 0.25, 1.0);
  // Job 1, furthest into its slice, gave its core to job 3: done at 0.75,
  // not after a slice ended (1 s) as without preemption.
  CHECK(c.TickAt(0.75) == std::vector<int64_t>{3});
  // Job 1 takes the core back ahead of any other waiting; it did 0.5 s of
  // its 3, and its new slice ends at 1.75, job 2's at 1.25.
  CHECK(c.ticks.back().first == doctest::Approx(1.25));
  // Without preemption job 3 waits for the first slice to end.
  Cpu d(2, 1.0, false);
  d.cpu.Start(0, 1, 3.0, 1.0);
  d.cpu.Start(0.25, 2, 3.0, 1.0);
  d.cpu.Start(0.5, 3, 0.25, 1.0);
  CHECK(d.TickAt(1.0).empty());
  CHECK(d.TickAt(1.25) == std::vector<int64_t>{3});
  // A job with no work is done at once and preempts none: job 1 keeps
  // its slice, which ends at 1 s, not 1.5.
  Cpu e(1, 1.0, true);
  e.cpu.Start(0, 1, 3.0, 1.0);
  e.cpu.Start(0.5, 2, 0.0, 1.0);
  CHECK(e.TickAt(0.5) == std::vector<int64_t>{2});
  CHECK(e.ticks.back().first == doctest::Approx(1.0));
}

TEST_CASE("sim cpu: a wake-up credit lengthens a started job's first slice, not later ones") {
  // One core, slices of 1 s, a credit of 2 s: job 1 (5 s of work) runs
  // 3 s before job 2, started at 0.5 s, may take the core.
  Cpu c(1, 1.0, false, 2.0);
  c.cpu.Start(0, 1, 5.0, 1.0);
  c.cpu.Start(0.5, 2, 1.5, 1.0);
  CHECK(c.TickAt(3.0).empty());
  // Job 2 started too: its first slice is 3 s, room for its 1.5.
  CHECK(c.TickAt(4.5) == std::vector<int64_t>{2});
  // Job 1 was preempted, not started: a plain slice, 1 s of its 2 left.
  CHECK(c.TickAt(5.5).empty());
  CHECK(c.TickAt(6.5) == std::vector<int64_t>{1});
  // Without the credit job 2 takes the core when job 1's first second ends.
  Cpu d(1, 1.0);
  d.cpu.Start(0, 1, 5.0, 1.0);
  d.cpu.Start(0.5, 2, 1.5, 1.0);
  CHECK(d.ticks.back().first == doctest::Approx(1.0));
  // Preempting on wake-up, the credited job is the last one preempted:
  // job 2 (started at 0.25 s, 2.75 s of its 3 s slice left) keeps its core
  // when job 3 starts at 0.5 s, job 1 (2.5 s left) gives its core up.
  Cpu e(2, 1.0, true, 2.0);
  e.cpu.Start(0, 1, 5.0, 1.0);
  e.cpu.Start(0.25, 2, 5.0, 1.0);
  e.cpu.Start(0.5, 3, 0.25, 1.0);
  CHECK(e.TickAt(0.75) == std::vector<int64_t>{3});
  // Job 1 back on the freed core with a plain slice, ending at 1.75;
  // job 2's first slice ends at 3.25.
  CHECK(e.ticks.back().first == doctest::Approx(1.75));
}

TEST_CASE("sim cpu: with time slices, jobs on two cores go at their shared speed") {
  Cpu c(2, 1.0);
  c.cpu.Start(0, 1, 0.5, 0.5);
  // Alone: full speed.
  CHECK(c.ticks.back().first == doctest::Approx(0.5));
  c.cpu.Start(0.25, 2, 0.5, 0.5);
  // Both run, each at half speed: job 1's remaining 0.25 s takes 0.5 s.
  CHECK(c.TickAt(0.75) == std::vector<int64_t>{1});
  // Job 2 did 0.25 s of work, then alone finishes the rest at full speed.
  CHECK(c.TickAt(1.0) == std::vector<int64_t>{2});
  // A job with no work is done at once, even waiting for a core.
  Cpu d(1, 1.0);
  d.cpu.Start(0, 1, 2.0, 1.0);
  d.cpu.Start(0, 2, 0.0, 1.0);
  CHECK(d.TickAt(0.0) == std::vector<int64_t>{2});
  // Alone, job 1 keeps its core when its slice ends.
  CHECK(d.TickAt(1.0).empty());
  CHECK(d.TickAt(2.0) == std::vector<int64_t>{1});
}

}  // namespace
}  // namespace dmlps::sim
