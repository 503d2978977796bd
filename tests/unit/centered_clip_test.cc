// Centred clipping with worker momentum (docs/algorithms-robustness.md, "Robust
// aggregation"): the rule's parsing, its arithmetic round by round, and the
// model store combining a round of pushes by it.
#include "server/centered_clip.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "server/aggregate.h"
#include "server/model_store.h"
#include "tensor_test_util.h"

namespace dmlps {
namespace {

using server::Aggregation;
using server::CenteredClip;
using testing::ChunkComes;
using testing::StreamedTensor;
using testing::WholeTensor;

Aggregation Clip(double radius, double momentum, int64_t iterations) {
  Aggregation rule;
  rule.rule = Aggregation::Rule::kCenteredClip;
  rule.radius = radius;
  rule.momentum = momentum;
  rule.iterations = iterations;
  return rule;
}

TEST_CASE("--aggregate parses cclip:TAU[:ITERS]") {
  Result<Aggregation> plain = server::ParseAggregation("cclip:10");
  REQUIRE(plain.ok());
  CHECK(plain->rule == Aggregation::Rule::kCenteredClip);
  CHECK(plain->radius == 10);
  CHECK(plain->iterations == 10);
  CHECK(plain->robust());
  Result<Aggregation> full = server::ParseAggregation("cclip:0.5:3");
  REQUIRE(full.ok());
  CHECK(full->radius == 0.5);
  CHECK(full->iterations == 3);
  for (const char* bad : {"cclip", "cclip:", "cclip:0", "cclip:-1", "cclip:x", "cclip:inf",
                          "cclip:nan", "cclip:1e400", "cclip:1:", "cclip:1:0", "cclip:1:1.5",
                          "cclip:1:101", "cclip:1:2:3", "cclip:1:x"}) {
    CAPTURE(bad);
    CHECK_FALSE(server::ParseAggregation(bad).ok());
  }
  CHECK(server::ParseAggregation("cclip:0").status().message().find("radius TAU > 0 or auto") !=
        std::string::npos);
  Result<Aggregation> adaptive = server::ParseAggregation("cclip:auto:5");
  REQUIRE(adaptive.ok());
  CHECK(adaptive->adaptive);
  CHECK(adaptive->iterations == 5);
  CHECK(server::ParseAggregation("cclip:auto")->iterations == 10);
  CHECK_FALSE(server::ParseAggregation("cclip:auto:0").ok());
  CHECK_FALSE(server::ParseAggregation("cclip:Auto").ok());
  CHECK_FALSE(plain->adaptive);
  CHECK(server::ParseAggregation("cclip:1:0").status().message().find("ITERS in [1, 100]") !=
        std::string::npos);
}

TEST_CASE("a round starts from the momenta's median and clips each pull to the radius") {
  CenteredClip clip(Clip(1, 0, 1));
  const std::vector<int64_t> workers{0, 1, 2};
  const std::vector<std::vector<float>> values{{0.f, 0.f}, {0.2f, 0.f}, {10.f, 0.f}};
  const std::span<const float> v = clip.Round(workers, values);
  // From the median (0.2, 0): pulls of -0.2 and 0 as they are, 9.8 clipped
  // to 1; the centre moves by their mean.
  REQUIRE(v.size() == 2);
  CHECK(v[0] == doctest::Approx(0.2 + 0.8 / 3));
  CHECK(v[1] == 0.f);
  CHECK(clip.workers() == 3);
}

TEST_CASE("each worker's momentum sums its pushes over the rounds, as heavy-ball SGD") {
  CenteredClip clip(Clip(0.5, 0.5, 1));
  const std::vector<int64_t> one{7};
  // The first push is the momentum: m = 2, the centre there.
  CHECK(clip.Round(one, std::vector<std::vector<float>>{{2.f}})[0] == 2.f);
  // m = 0.5 * 2 + 2 = 3: the centre moves 1 towards it, clipped to 0.5.
  CHECK(clip.Round(one, std::vector<std::vector<float>>{{2.f}})[0] == doctest::Approx(2.5));
  // m = 0.5 * 3 + 1.5 = 3: the rest of the way.
  CHECK(clip.Round(one, std::vector<std::vector<float>>{{1.5f}})[0] == doctest::Approx(3.0));
  // Unclipped, the centre of one worker is its momentum: 0.5 * 3 + 1.
  CenteredClip wide(Clip(1e9, 0.5, 1));
  for (const float g : {2.f, 2.f, 1.5f})
    (void)wide.Round(one, std::vector<std::vector<float>>{{g}});
  CHECK(wide.Round(one, std::vector<std::vector<float>>{{1.f}})[0] == doctest::Approx(2.5));
}

TEST_CASE("one worker far out moves the centre at most the radius over the pushes") {
  // Three at 1, one at 1e6: each iteration the far one pulls by the radius
  // and the others pull back; the fixed point is 1 + radius / 3.
  CenteredClip clip(Clip(0.3, 0, 100));
  const std::vector<int64_t> workers{0, 1, 2, 3};
  const std::vector<std::vector<float>> values{{1.f}, {1.f}, {1.f}, {1e6f}};
  const std::span<const float> v = clip.Round(workers, values);
  CHECK(v[0] == doctest::Approx(1.1).epsilon(1e-4));
  // With one iteration, from the median 1: by radius / 4 exactly.
  CenteredClip once(Clip(0.3, 0, 1));
  CHECK(once.Round(workers, values)[0] == doctest::Approx(1.075));
  // Unclipped, one iteration from any centre reaches the momenta's mean.
  CenteredClip wide(Clip(1e9, 0, 1));
  (void)wide.Round(workers, values);
  const std::vector<std::vector<float>> near{{1.f}, {2.f}, {3.f}, {6.f}};
  CHECK(wide.Round(workers, near)[0] == doctest::Approx(3.0));
}

Aggregation Adaptive(double momentum, int64_t iterations) {
  Aggregation rule = Clip(0, momentum, iterations);
  rule.adaptive = true;
  return rule;
}

TEST_CASE("cclip:auto: one worker far out of four moves the centre not at all") {
  // Mixed, the three near ones are each the mean of the three (the far one
  // is no one's nearest but its own); the far one's mix is far too. The
  // radius is the third nearest mix's distance: the near ones' own, which
  // the steps shrink to nothing, and the far one's pull with it.
  CenteredClip clip(Adaptive(0, 30));
  const std::vector<int64_t> workers{0, 1, 2, 3};
  const std::vector<std::vector<float>> values{{0.f, 0.f}, {3.f, 0.f}, {0.f, 3.f}, {1e6f, -1e6f}};
  const std::span<const float> v = clip.Round(workers, values);
  CHECK(v[0] == doctest::Approx(1.0).epsilon(1e-4));
  CHECK(v[1] == doctest::Approx(1.0).epsilon(1e-4));
  // A fixed radius of the same spread keeps a pull of at least radius / 3
  // towards the far one.
  CenteredClip fixed(Clip(3, 0, 30));
  const std::span<const float> w = fixed.Round(workers, values);
  CHECK(std::hypot(w[0] - 1.0, w[1] - 1.0) >= 1.0);
  CHECK(w[0] > 1.f);
  CHECK(w[1] < 1.f);
}

TEST_CASE("cclip:auto: without a worker far out the centre is near the momenta's mean") {
  // Four at the corners of a square around (1, 1): each mixes with its two
  // neighbours, the four mixes stand alike around the same centre.
  CenteredClip clip(Adaptive(0, 30));
  const std::vector<int64_t> workers{0, 1, 2, 3};
  const std::vector<std::vector<float>> values{{0.f, 0.f}, {2.f, 0.f}, {2.f, 2.f}, {0.f, 2.f}};
  const std::span<const float> v = clip.Round(workers, values);
  CHECK(v[0] == doctest::Approx(1.0).epsilon(1e-4));
  CHECK(v[1] == doctest::Approx(1.0).epsilon(1e-4));
  // Two workers: each mix is the pair's mean, so is the centre.
  CenteredClip pair(Adaptive(0, 1));
  const std::vector<int64_t> two{4, 5};
  const std::span<const float> p =
      pair.Round(two, std::vector<std::vector<float>>{{1.f, 0.f}, {3.f, 4.f}});
  CHECK(p[0] == doctest::Approx(2.0));
  CHECK(p[1] == doctest::Approx(2.0));
}

TEST_CASE("a value left out leaves the worker's momentum there as it was") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  CenteredClip clip(Clip(100, 0.5, 1));
  const std::vector<int64_t> workers{0, 1};
  // Worker 1 has no value at coordinate 1 yet: the median takes worker 0's,
  // and worker 1's momentum starts at the centre there.
  std::span<const float> v =
      clip.Round(workers, std::vector<std::vector<float>>{{2.f, 4.f}, {4.f, nan}});
  CHECK(v[0] == doctest::Approx(3.0));
  CHECK(v[1] == doctest::Approx(4.0));
  // Now worker 0 leaves coordinate 0 out: its momentum stays 2 there,
  // worker 1's becomes 0.5 * 4 + 4 = 6; the centre goes to their mean.
  // At coordinate 1 both become 0.5 * 4 + 2 = 4.
  v = clip.Round(workers, std::vector<std::vector<float>>{{nan, 2.f}, {4.f, 2.f}});
  CHECK(v[0] == doctest::Approx(4.0));
  CHECK(v[1] == doctest::Approx(4.0));
}

TEST_CASE("the store combines a round by centred clipping, its state by the median") {
  for (const int64_t lane_floats : {int64_t{3}, int64_t{1}}) {
    CAPTURE(lane_floats);
    server::ModelStore store(std::vector<float>(3, 0.f), lane_floats, 1);
    store.set_state_begin(2);  // the last float is module state
    CenteredClip clip(Clip(1, 0, 1));
    // Workers 0 and 1 push twice each (their weighted means: (1, 0, 1)
    // and (1, 0, 3)), worker 2 once, far out.
    store.Combine(
        {WholeTensor({0.f, 0.f, 1.f}), WholeTensor({2.f, 0.f, 1.f}), WholeTensor({1.f, 0.f, 3.f}),
         WholeTensor({1.f, 0.f, 3.f}), WholeTensor({100.f, 0.f, 50.f})},
        {1.f, 1.f, 2.f, 2.f, 4.f}, clip, {0, 0, 1, 1, 2});
    store.Apply(nullptr, 1.f / 10);
    const std::vector<float> params = store.Params();
    CHECK(clip.workers() == 3);
    // The parameters: from the median (1, 0), worker 2 pulls by the radius.
    CHECK(params[0] == doctest::Approx(1 + 1.0 / 3));
    CHECK(params[1] == 0.f);
    // The state: the median of the five pushes' values.
    CHECK(params[2] == doctest::Approx(3.f));
  }
}

TEST_CASE("centred clipping waits for a streamed push to be whole") {
  server::ModelStore store(std::vector<float>(4, 0.f), 2, 1);
  CenteredClip clip(Clip(100, 0, 1));
  auto push = StreamedTensor(4, 2, 2);
  store.Combine({push, WholeTensor({1.f, 1.f, 1.f, 1.f})}, {1.f, 1.f}, clip, {0, 1});
  store.Apply(nullptr, 0.5f);
  ChunkComes(*push, 0, {3.f, 3.f});
  store.Advance();
  CHECK(store.pending() > 0);  // the round needs all of every push
  CHECK(clip.workers() == 0);
  ChunkComes(*push, 1, {3.f, 3.f});
  store.Advance();
  CHECK(store.pending() == 0);
  CHECK(store.Params() == std::vector<float>{2.f, 2.f, 2.f, 2.f});
}

}  // namespace
}  // namespace dmlps
