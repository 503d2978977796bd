// Traces from hostile hands: times that would overflow are refused, counts
// beyond any run are clamped, and the summary of a trace of many workers
// takes time linear in its records.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "dmlps/trace/tools.h"
#include "dmlps/trace/trace.h"

namespace dmlps::trace {
namespace {

Record Step(std::string node, int64_t t, Args args) {
  return {t, std::move(node), "compute", "span", "step", 1000, std::move(args)};
}

ReadResult Parse(const std::vector<Record>& records) {
  msgpack::sbuffer bytes;
  Pack(MetaRecord(0, "test"), &bytes);
  for (const Record& r : records) Pack(r, &bytes);
  return ParseTrace(std::string_view(bytes.data(), bytes.size()), "hostile.trace");
}

TEST_CASE("trace: a time or duration whose span end would overflow is refused") {
  const int64_t huge = std::numeric_limits<int64_t>::max() - 10;
  for (const Record& r : {Step("worker-0", huge, {}), Step("worker-0", -huge, {}),
                          Record{5, "worker-0", "compute", "span", "step", huge, {}},
                          Record{5, "worker-0", "compute", "span", "step", -1, {}}}) {
    const ReadResult read = Parse({Step("worker-0", 1, {}), r});
    CHECK(read.status.code() == StatusCode::kDataLoss);
    CHECK(read.status.message().find("out of range") != std::string::npos);
    CHECK(read.records.size() == 1);  // the good record before it
  }
  // Times of this century and their durations read as they are.
  const ReadResult good = Parse({Step("worker-0", 1'700'000'000'000'000, {})});
  CHECK(good.status.ok());
}

TEST_CASE("trace: the summary clamps counts beyond any run instead of casting them") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<Record> records = {
      {0, "server-0", "run", "instant", "start", 0, {{"workers", 1e300}, {"target", 0.9}}},
      Step("worker-0", 10, {{"samples", 1e300}, {"clock", nan}}),
      Step("worker-0", 20, {{"samples", 1e300}, {"clock", -1e300}}),
      Step("worker-0", 30, {{"samples", -1e300}, {"clock", 1.0}}),
      {40, "server-0", "comm", "instant", "push", 0, {{"worker", 1e300}, {"staleness", 1.0}}},
      {50, "server-0", "comm", "instant", "push", 0, {{"worker", 0.0}, {"staleness", 2.0}}},
      {60, "server-0", "run", "instant", "target", 0, {{"iteration", -1e300}, {"seconds", 1.0}}}};
  const TraceSummary s = Summarize(records);
  REQUIRE(s.runs.size() == 1);
  CHECK(s.runs[0].workers == 1'000'000'000'000'000);
  CHECK(s.runs[0].target_iteration == -1'000'000'000'000'000);
  REQUIRE(s.workers.size() == 1);
  CHECK(s.workers[0].steps == 3);
  CHECK(s.workers[0].samples == 2'000'000'000'000'000);  // negative counts add nothing
  CHECK(s.workers[0].timed_steps == 3);                  // clocks 0 (NaN), -1e15 and 1
  CHECK(s.workers[0].pushes == 1);                       // rank 1e15 is no one's
}

TEST_CASE("trace: the summary of many workers is linear in the records") {
  // 50000 workers with a step each and a push each at the server: the
  // summary once looked at every record for every worker, 5e9 visits
  // (tens of seconds); one pass takes a fraction of one.
  constexpr int64_t kWorkers = 50000;
  std::vector<Record> records;
  for (int64_t w = 0; w < kWorkers; ++w) {
    records.push_back(Step("worker-" + std::to_string(w), 10 + w, {{"samples", int64_t{8}}}));
    records.push_back({20 + w, "server-0", "comm", "instant", "push", 0, {{"worker", w}}});
  }
  const auto start = std::chrono::steady_clock::now();
  const TraceSummary s = Summarize(records);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(s.workers.size() == static_cast<size_t>(kWorkers));
  CHECK(s.workers[kWorkers - 1].node == "worker-" + std::to_string(kWorkers - 1));
  CHECK(s.workers[kWorkers - 1].pushes == 1);
  CHECK(s.workers[kWorkers - 1].samples == 8);
  MESSAGE("summary of ", kWorkers, " workers in ", seconds, " s");
  CHECK(seconds < 3.0);
}

}  // namespace
}  // namespace dmlps::trace
