#include "dmlps/worker/resource_usage.h"

#include <doctest/doctest.h>
#include <pthread.h>
#include <sched.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <thread>

namespace dmlps::worker {
namespace {

TEST_CASE("/proc stat and statm are parsed, even with a command name holding ') '") {
  // Fields 14 and 15 (utime, stime) are 250 and 50 ticks.
  const std::string stat =
      "4242 (dmlps (worker) 2) R 1 4242 4242 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 3 0 7";
  Result<ResourceSample> s = ParseProcStat(stat, "5000 1200 300 10 0 900 0\n", 100.0, 4096);
  REQUIRE(s.ok());
  CHECK(s->cpu_seconds == doctest::Approx(3.0));
  CHECK(s->resident_bytes == 1200 * 4096);
  CHECK_FALSE(ParseProcStat("no name here", "1 2", 100, 4096).ok());
  CHECK_FALSE(ParseProcStat("1 (x) R 1 2", "1 2", 100, 4096).ok());
  CHECK_FALSE(ParseProcStat(stat, "", 100, 4096).ok());
}

double ProcessCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

TEST_CASE("a busy loop's CPU use is read as the kernel counts it, and this process has memory") {
  Result<ResourceSample> before = ReadSelfUsage();
  REQUIRE(before.ok());
  CHECK(before->resident_bytes > 1 << 20);
  const double cpu_start = ProcessCpuSeconds();
  const auto wall_start = std::chrono::steady_clock::now();
  // Spin until 300 ms of CPU are used (30 clock ticks, so the tick-grained
  // /proc figures are within a few percent), however busy the machine is.
  volatile double x = 0;
  while (ProcessCpuSeconds() - cpu_start < 0.3 &&
         std::chrono::steady_clock::now() - wall_start < std::chrono::seconds(20)) {
    for (int i = 0; i < 1000; ++i) x = x + std::sqrt(x + 1.0);
  }
  Result<ResourceSample> after = ReadSelfUsage();
  REQUIRE(after.ok());
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  const double expected = (ProcessCpuSeconds() - cpu_start) / wall;
  const double cores = CpuCores(*before, *after);
  // One thread spinning: at most one core, and what the process clock says.
  CHECK(cores <= 1.1);
  CHECK(cores == doctest::Approx(expected).epsilon(0.15));
}

TEST_CASE("a thread's run delay is parsed from schedstat, and bad contents are refused") {
  Result<double> wait = ParseRunDelay("81234567 2500000000 321\n");
  REQUIRE(wait.ok());
  CHECK(*wait == doctest::Approx(2.5));
  for (const char* bad : {"", "12", "12 -5 1", "12 1e9 1", "1 99999999999999999999 1"}) {
    CHECK_FALSE(ParseRunDelay(bad).ok());
  }
}

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// Spins until this thread has used `seconds` of CPU (or 20 s went by).
void Spin(double seconds) {
  const double start = ThreadCpuSeconds();
  const auto wall_start = std::chrono::steady_clock::now();
  volatile double x = 0;
  while (ThreadCpuSeconds() - start < seconds &&
         std::chrono::steady_clock::now() - wall_start < std::chrono::seconds(20)) {
    for (int i = 0; i < 1000; ++i) x = x + std::sqrt(x + 1.0);
  }
}

TEST_CASE("two threads spinning on one core each wait for it while the other runs") {
  Result<double> before = ReadThreadRunDelay();
  if (!before.ok()) {
    MESSAGE("no /proc/thread-self/schedstat here: " << before.status().ToString());
    return;
  }
  // Both on this thread's first allowed core.
  cpu_set_t allowed;
  REQUIRE(pthread_getaffinity_np(pthread_self(), sizeof(allowed), &allowed) == 0);
  int core = 0;
  while (core < CPU_SETSIZE && !CPU_ISSET(core, &allowed)) ++core;
  REQUIRE(core < CPU_SETSIZE);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(core, &one);
  REQUIRE(pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0);
  std::thread other([&] {
    pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
    Spin(0.3);
  });
  Spin(0.2);
  Result<double> after = ReadThreadRunDelay();
  other.join();
  pthread_setaffinity_np(pthread_self(), sizeof(allowed), &allowed);
  REQUIRE(after.ok());
  // While this thread used 200 ms of the core, the other one had it for
  // about as long: this one waited most of that.
  CHECK(*after - *before > 0.1);
  CHECK(*after - *before < 20);
}

}  // namespace
}  // namespace dmlps::worker
