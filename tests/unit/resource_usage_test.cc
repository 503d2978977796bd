#include "dmlps/worker/resource_usage.h"

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <ctime>

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

}  // namespace
}  // namespace dmlps::worker
