// The model never becomes non-finite: a step that would overflow is refused
// whole, over every lane, and leaves the model and the optimizer's state as
// they were (docs/algorithms-robustness.md, "Updates that would overflow").
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "dmlps/optim/optimizer.h"
#include "dmlps/proto/codec.h"
#include "server/model_store.h"
#include "tensor_test_util.h"

namespace dmlps {
namespace {

using testing::WholeTensor;

bool AllFinite(const std::vector<float>& values) {
  for (float v : values) {
    if (!std::isfinite(v)) return false;
  }
  return true;
}

TEST_CASE("optimizers tell whether a step stays finite without taking it") {
  auto sgd = optim::MakeOptimizer(0.1, 0, 2);
  REQUIRE(sgd.ok());
  std::vector<float> params{1.f, 2.f};
  const std::vector<float> small{1.f, 1.f};
  const std::vector<float> huge{3e38f, 0.f};
  CHECK((*sgd)->StepStaysFinite(params, small, optim::StepInfo{1.f}, 0));
  CHECK_FALSE((*sgd)->StepStaysFinite(params, huge, optim::StepInfo{100.f}, 0));
  CHECK(params == std::vector<float>{1.f, 2.f});
  // Without an optimizer the step is params += scale * acc.
  CHECK_FALSE(optim::AccumulatedStaysFinite(nullptr, optim::StepInfo{10.f}, params, huge));
  CHECK(optim::AccumulatedStaysFinite(nullptr, optim::StepInfo{0.1f}, params, huge));

  auto momentum = optim::MakeOptimizer(0.1, 0.9, 2);
  REQUIRE(momentum.ok());
  // A velocity near the largest float overflows once the gradient adds to it.
  REQUIRE((*momentum)->SetState(std::vector<float>{3e38f, 0.f}).ok());
  CHECK_FALSE((*momentum)->StepStaysFinite(params, huge, optim::StepInfo{1.f}, 0));
  CHECK((*momentum)->StepStaysFinite(params, small, optim::StepInfo{1.f}, 0));
}

TEST_CASE("a push whose weighted sum overflows is refused whole and the model stays") {
  for (const int64_t lane_floats : {int64_t{8}, int64_t{3}}) {
    for (const int64_t threads : {int64_t{1}, int64_t{2}}) {
      CAPTURE(lane_floats);
      CAPTURE(threads);
      const std::vector<float> start{0.5f, -1.f, 2.f, 0.f, 1.f, 3.f, -2.f, 0.25f};
      server::ModelStore store(start, lane_floats, threads);
      auto optimizer = optim::MakeOptimizer(0.1, 0.9, 8);
      REQUIRE(optimizer.ok());
      const std::vector<float> velocity = (*optimizer)->State();

      // Only the last value overflows once weighted by 64 samples: the
      // whole step is refused, its other lanes included.
      std::vector<float> poison(8, 1.f);
      poison[7] = 1e37f;
      std::vector<bool> verdicts;
      store.Stage(WholeTensor(poison), 64.f);
      store.Apply(optimizer->get(), 1.f, [&](bool applied) { verdicts.push_back(applied); });
      CHECK(verdicts == std::vector<bool>{false});
      CHECK(store.refused() == 1);
      CHECK(store.Params() == start);
      CHECK((*optimizer)->State() == velocity);

      // Training goes on: the next real step is taken from where it was.
      store.Stage(WholeTensor(std::vector<float>(8, 1.f)), 1.f);
      store.Apply(optimizer->get(), 1.f, [&](bool applied) { verdicts.push_back(applied); });
      CHECK(verdicts == std::vector<bool>{false, true});
      const std::vector<float> after = store.Params();
      CHECK(AllFinite(after));
      CHECK(after[0] == doctest::Approx(0.4f));
      CHECK(store.refused() == 1);
    }
  }
}

TEST_CASE("a streamed push that overflows in its last chunk leaves every lane as it was") {
  const std::vector<float> start(6, 1.f);
  server::ModelStore store(start, 2, 1);
  Result<proto::IncomingTensor> opened = proto::IncomingTensor::Open(6, 3, 2, {});
  REQUIRE(opened.ok());
  auto push = std::make_shared<proto::IncomingTensor>(std::move(opened).value());
  store.Stage(push, 64.f);
  bool done = false;
  store.Apply(nullptr, 1.f, [&](bool applied) {
    done = true;
    CHECK_FALSE(applied);
  });
  std::vector<std::vector<float>> sent;
  store.Send([&](int64_t, zmq::message_t frame) {
    const auto* data = static_cast<const float*>(frame.data());
    sent.emplace_back(data, data + frame.size() / sizeof(float));
  });
  const std::vector<std::vector<float>> chunks{{1.f, 1.f}, {1.f, 1.f}, {1e37f, 1.f}};
  for (int64_t i = 0; i < 3; ++i) {
    net::Frames frames;
    frames.emplace_back(chunks[static_cast<size_t>(i)].data(), 2 * sizeof(float));
    REQUIRE(server::TakeChunk(*push, i, frames).ok());
    store.Advance();
    // No lane applies, and so no chunk of the reply goes, before the
    // whole step is known to stay finite.
    if (i < 2) CHECK(sent.empty());
  }
  CHECK(done);
  CHECK(sent.size() == 3);
  CHECK(store.Params() == start);
  for (const auto& chunk : sent) CHECK(chunk == std::vector<float>{1.f, 1.f});
}

}  // namespace
}  // namespace dmlps
