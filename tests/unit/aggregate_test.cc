// Robust aggregation (docs/algorithms-robustness.md, "Robust aggregation"): the median
// or trimmed mean of a round's pushes, coordinate by coordinate, and the
// norm bound on each push.
#include "server/aggregate.h"

#include <doctest/doctest.h>

#include <memory>
#include <vector>

#include "dmlps/proto/codec.h"
#include "server/model_store.h"
#include "tensor_test_util.h"

namespace dmlps {
namespace {

using testing::ChunkComes;
using testing::StreamedTensor;
using testing::WholeTensor;

TEST_CASE("--aggregate parses mean, median and trimmed-mean:F with F in [0, 0.5)") {
  CHECK(server::ParseAggregation("mean")->rule == server::Aggregation::Rule::kMean);
  CHECK(server::ParseAggregation("median")->rule == server::Aggregation::Rule::kMedian);
  Result<server::Aggregation> trimmed = server::ParseAggregation("trimmed-mean:0.25");
  REQUIRE(trimmed.ok());
  CHECK(trimmed->rule == server::Aggregation::Rule::kTrimmedMean);
  CHECK(trimmed->trim == 0.25);
  for (const char* bad : {"", "avg", "trimmed-mean:", "trimmed-mean:0.5", "trimmed-mean:-0.1",
                          "trimmed-mean:x", "trimmed-mean:0.2x", "trimmed-mean:nan"}) {
    CAPTURE(bad);
    CHECK_FALSE(server::ParseAggregation(bad).ok());
  }
  CHECK(server::AggregatesRounds("bsp"));
  CHECK(server::AggregatesRounds("backup"));
  CHECK_FALSE(server::AggregatesRounds("asp"));
  CHECK_FALSE(server::AggregatesRounds("wbsp"));
}

TEST_CASE("the robust rules ignore one value however far out it lies") {
  server::Aggregation median;
  median.rule = server::Aggregation::Rule::kMedian;
  std::vector<float> odd{3.f, 1e30f, 2.f};
  CHECK(server::AggregateValues(odd, median) == 3.f);
  std::vector<float> even{1.f, -1e30f, 3.f, 2.f};
  CHECK(server::AggregateValues(even, median) == 1.5f);
  // Halved before they are added: no overflow between two huge values.
  std::vector<float> huge{3e38f, 3e38f};
  CHECK(server::AggregateValues(huge, median) == 3e38f);

  server::Aggregation trimmed;
  trimmed.rule = server::Aggregation::Rule::kTrimmedMean;
  trimmed.trim = 0.25;
  std::vector<float> four{1.f, 1000.f, 3.f, 2.f};  // 1 and 1000 left out
  CHECK(server::AggregateValues(four, trimmed) == 2.5f);
  trimmed.trim = 0;
  std::vector<float> plain{1.f, 2.f, 6.f};
  CHECK(server::AggregateValues(plain, trimmed) == 3.f);
}

TEST_CASE("a combined update is the rule's value of the pushes, times their weight") {
  for (const int64_t lane_floats : {int64_t{4}, int64_t{1}}) {
    CAPTURE(lane_floats);
    server::ModelStore store(std::vector<float>(4, 0.f), lane_floats, 1);
    server::Aggregation median;
    median.rule = server::Aggregation::Rule::kMedian;
    // Three honest pushes near 1, one garbage push.
    store.Combine(
        {WholeTensor({1.f, 1.f, 1.f, 1.f}), WholeTensor({1.1f, 0.9f, 1.f, 1.f}),
         WholeTensor({0.9f, 1.1f, 1.f, 1.f}), WholeTensor({900.f, -900.f, 1e30f, -1e30f})},
        {64.f, 64.f, 64.f, 64.f}, median);
    // No optimizer: params += scale * acc, and scale 1 / W makes it the median.
    store.Apply(nullptr, 1.f / 256);
    const std::vector<float> params = store.Params();
    CHECK(params[0] == doctest::Approx(1.05f));
    CHECK(params[1] == doctest::Approx(0.95f));  // the mean of 0.9 and 1
    CHECK(params[2] == doctest::Approx(1.f));
    CHECK(params[3] == doctest::Approx(1.f));
  }
}

TEST_CASE("each push is scaled down to the norm bound before it is used") {
  server::ModelStore store(std::vector<float>(2, 0.f), 1, 1);
  store.set_max_norm(1.0);
  store.Stage(WholeTensor({3.f, 4.f}), 1.f);    // norm 5: scaled to 1
  store.Stage(WholeTensor({0.3f, 0.4f}), 1.f);  // norm 0.5: kept
  store.Apply(nullptr, 1.f);
  const std::vector<float> params = store.Params();
  CHECK(params[0] == doctest::Approx(0.6f + 0.3f));
  CHECK(params[1] == doctest::Approx(0.8f + 0.4f));

  // And so under a robust rule: the garbage push counts as one of norm 1.
  server::ModelStore robust(std::vector<float>(2, 0.f), 2, 1);
  robust.set_max_norm(1.0);
  server::Aggregation mean_rule;
  robust.Combine({WholeTensor({0.f, 0.f}), WholeTensor({3000.f, 4000.f})}, {1.f, 1.f}, mean_rule);
  robust.Apply(nullptr, 0.5f);
  CHECK(robust.Params()[0] == doctest::Approx(0.3f));
  CHECK(robust.Params()[1] == doctest::Approx(0.4f));
}

TEST_CASE("a streamed push under a norm bound waits until it is whole") {
  server::ModelStore store(std::vector<float>(4, 0.f), 2, 1);
  store.set_max_norm(1.0);
  auto push = StreamedTensor(4, 2, 2);
  store.Stage(push, 1.f);
  store.Apply(nullptr, 1.f);
  ChunkComes(*push, 0, {0.f, 0.f});
  store.Advance();
  CHECK(store.pending() > 0);  // the norm is not known yet
  ChunkComes(*push, 1, {0.f, 2.f});
  store.Advance();
  CHECK(store.pending() == 0);
  CHECK(store.Params() == std::vector<float>{0.f, 0.f, 0.f, 1.f});
}

}  // namespace
}  // namespace dmlps
