#include <doctest/doctest.h>

#include <chrono>
#include <cmath>

#include "dmlps/worker/resource_usage.h"

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

TEST_CASE("a busy loop shows as about one core, and this process has memory") {
  Result<ResourceSample> before = ReadSelfUsage();
  REQUIRE(before.ok());
  CHECK(before->resident_bytes > 1 << 20);
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  volatile double x = 0;
  while (std::chrono::steady_clock::now() < until) x = x + std::sqrt(x + 1.0);
  Result<ResourceSample> after = ReadSelfUsage();
  REQUIRE(after.ok());
  const double cores = CpuCores(*before, *after);
  // One thread spinning: at most one core, and most of one unless the
  // machine is very busy (a shared 2-core machine can take some of it).
  CHECK(cores <= 1.1);
  CHECK(cores > 0.2);
}

}  // namespace
}  // namespace dmlps::worker
