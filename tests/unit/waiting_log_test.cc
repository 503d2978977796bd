#include "server/waiting_log.h"

#include <doctest/doctest.h>

namespace dmlps::server {
namespace {

using std::chrono::milliseconds;

TEST_CASE(
    "waiting log: who and why with the workers still to come, a reason at most per interval") {
  WaitingLog log(milliseconds(5000));
  const Clock::time_point t0 = Clock::now();
  CHECK(log.Note("rank 7 is outside [0, 1]", "refused a worker: rank 7 is outside [0, 1]", 2, 2,
                 t0) ==
        "refused a worker: rank 7 is outside [0, 1]; still waiting for 2 of 2 workers");
  // The same reason again soon: counted, not said.
  CHECK_FALSE(log.Note("rank 7 is outside [0, 1]", "again", 2, 2, t0 + milliseconds(1000)));
  CHECK_FALSE(log.Note("rank 7 is outside [0, 1]", "again", 2, 2, t0 + milliseconds(4999)));
  // Another reason is said at once.
  CHECK(log.Note("bad data", "lost worker 0: bad data", 1, 2, t0 + milliseconds(2000)) ==
        "lost worker 0: bad data; still waiting for 1 of 2 workers");
  // After the interval, said again with how many came meanwhile.
  CHECK(log.Note("rank 7 is outside [0, 1]", "refused it", 1, 1, t0 + milliseconds(5000)) ==
        "refused it (2 more like it since the last line); still waiting for 1 of 1 worker");
  CHECK(log.Note("rank 7 is outside [0, 1]", "refused it", 1, 1, t0 + milliseconds(10000)) ==
        "refused it; still waiting for 1 of 1 worker");
}

TEST_CASE("waiting log: many reasons do not grow it without bound, and are said again") {
  WaitingLog log(milliseconds(5000));
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < 1000; ++i) {
    CHECK(log.Note("reason " + std::to_string(i), "x", 1, 1, t0).has_value());
  }
}

}  // namespace
}  // namespace dmlps::server
