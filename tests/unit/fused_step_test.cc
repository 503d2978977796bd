// The server's optimizer step checked and computed in one pass, out of
// place, and taken by swapping buffers: it must end bit for bit where the
// step taken in place ends, refuse what would overflow as the separate
// check does (docs/algorithms-robustness.md, "Updates that would overflow"), and never
// write a buffer that a reply still views.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "dmlps/optim/optimizer.h"
#include "server/model_store.h"
#include "tensor_test_util.h"

namespace dmlps {
namespace {

using testing::SameBits;
using testing::WholeTensor;

std::vector<float> Wave(size_t n, float phase) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(phase + 0.37f * static_cast<float>(i));
  return v;
}

// Optimizers that step out of place: nullptr (the plain sum) among them.
std::vector<std::unique_ptr<optim::Optimizer>> OutOfPlaceOptimizers(int64_t n) {
  std::vector<std::unique_ptr<optim::Optimizer>> made;
  made.push_back(nullptr);
  made.push_back(optim::MakeOptimizer(0.1, 0, n).value());
  made.push_back(optim::MakeOptimizer(0.1, 0.9, false, n).value());
  made.push_back(optim::MakeOptimizer(0.1, 0.9, true, n).value());
  return made;
}

TEST_CASE("a step computed out of place ends bit for bit where the step in place does") {
  const size_t n = 37;
  auto in_place = OutOfPlaceOptimizers(static_cast<int64_t>(n));
  auto out_of_place = OutOfPlaceOptimizers(static_cast<int64_t>(n));
  for (size_t k = 0; k < in_place.size(); ++k) {
    optim::Optimizer* a = in_place[k].get();
    optim::Optimizer* b = out_of_place[k].get();
    CAPTURE(a == nullptr ? std::string("none") : a->Name());
    REQUIRE(optim::StepsOutOfPlace(b));
    std::vector<float> params_a = Wave(n, 0.5f), params_b = params_a;
    for (int step = 0; step < 4; ++step) {
      const std::vector<float> grad = Wave(n, static_cast<float>(step));
      std::vector<float> acc_a = grad, acc_b = grad;
      optim::ApplyAccumulated(a, 0.7f, params_a, acc_a);
      // The second one in two slices, as the model store's lanes take it.
      std::vector<float> out(n);
      const optim::StepInfo info = optim::BeginStep(b, 0.7f);
      for (const auto& [from, to] : {std::pair<size_t, size_t>{0, 16}, {16, n}}) {
        const auto offset = static_cast<int64_t>(from);
        std::span<float> acc(acc_b.data() + from, to - from);
        CHECK(optim::StepAccumulatedOutOfPlace(
            b, info, std::span<const float>(params_b.data() + from, to - from), acc,
            std::span<float>(out.data() + from, to - from), offset));
        optim::TakeAccumulated(b, acc, offset);
      }
      params_b = out;
      CHECK(SameBits(params_a, params_b));
      CHECK(acc_b == std::vector<float>(n, 0.f));  // zeroed for the next round, as in place
      if (a != nullptr) CHECK(SameBits(a->State(), b->State()));
    }
  }
}

TEST_CASE("momentum steps flush a velocity decaying into denormals to zero, and only there") {
#if defined(__SSE__)
  // A velocity at the smallest normal float, a gradient of 0: one step at
  // μ = 0.5 would make it denormal (slow on x86: docs/straggler-matrix-sim.md). The
  // steps flush it; the caller's own arithmetic keeps denormals.
  const float tiny = std::numeric_limits<float>::min();
  const size_t n = 5;
  const std::vector<float> zero(n, 0.f);
  for (bool nesterov : {false, true}) {
    CAPTURE(nesterov);
    auto momentum = optim::MakeOptimizer(0.1, 0.5, nesterov, static_cast<int64_t>(n)).value();
    REQUIRE(momentum->SetState(std::vector<float>(n, tiny)).ok());
    std::vector<float> params(n, 1.f);
    momentum->StepSlice(params, zero, optim::StepInfo{1.f}, 0);
    CHECK(momentum->State() == std::vector<float>(n, 0.f));
  }
  std::vector<float> params(n, 1.f), velocity(n, tiny);
  optim::LocalMomentumStep(params, velocity, zero, 0.1f, 0.5f);
  CHECK(velocity == std::vector<float>(n, 0.f));
  volatile float half = 0.5f;
  CHECK(std::fpclassify(tiny * half) == FP_SUBNORMAL);  // the mode was restored
#endif
}

TEST_CASE("a step out of place that would overflow says so and changes nothing") {
  const size_t n = 4;
  for (auto& optimizer : OutOfPlaceOptimizers(static_cast<int64_t>(n))) {
    CAPTURE(optimizer == nullptr ? std::string("none") : optimizer->Name());
    const std::vector<float> params{1.f, 2.f, 3.f, 4.f};
    const std::vector<float> state =
        optimizer != nullptr ? optimizer->State() : std::vector<float>{};
    std::vector<float> acc{1.f, 3e38f, 1.f, 1.f};
    std::vector<float> out(n);
    CHECK_FALSE(optim::StepAccumulatedOutOfPlace(optimizer.get(), optim::StepInfo{100.f}, params,
                                                 acc, out));
    CHECK(params == std::vector<float>{1.f, 2.f, 3.f, 4.f});
    if (optimizer != nullptr) CHECK(optimizer->State() == state);
    // A NaN in the sum is refused as well.
    std::vector<float> nan_acc{1.f, std::nanf(""), 1.f, 1.f};
    CHECK_FALSE(optim::StepAccumulatedOutOfPlace(optimizer.get(), optim::StepInfo{1.f}, params,
                                                 nan_acc, out));
  }
  // Delayed momentum keeps a buffer and step counts: it checks and steps in place.
  auto delayed = optim::MakeOptimizer(0.1, 0.9, true, 3, static_cast<int64_t>(n)).value();
  CHECK_FALSE(optim::StepsOutOfPlace(delayed.get()));
}

TEST_CASE("the model store takes a step by swapping in the lane's second buffer, never a copy") {
  for (const int64_t threads : {1, 2}) {
    CAPTURE(threads);
    const std::vector<float> start(6, 1.f);
    server::ModelStore store(start, 4, threads);  // lanes of 4 and 2
    auto momentum = optim::MakeOptimizer(0.5, 0.5, 6).value();
    std::vector<zmq::message_t> held;
    auto sink = [&](int64_t, zmq::message_t frame) { held.push_back(std::move(frame)); };
    store.Send(sink);
    const void* first = held[0].data();
    held.clear();  // sent: nothing views the lanes

    store.Stage(WholeTensor(std::vector<float>(6, 1.f)), 1.f);
    store.Apply(momentum.get(), 1.f);  // u = 1, params = 1 - 0.5
    store.Send(sink);
    REQUIRE(held.size() == 2);
    const void* second = held[0].data();
    CHECK(second != first);
    CHECK(static_cast<const float*>(held[0].data())[0] == 0.5f);
    // Still viewed by the reply: the next step goes to a fresh buffer and
    // the reply keeps what it showed.
    store.Stage(WholeTensor(std::vector<float>(6, 1.f)), 1.f);
    store.Apply(momentum.get(), 1.f);  // u = 1.5, params = 0.5 - 0.75
    CHECK(static_cast<const float*>(held[0].data())[0] == 0.5f);
    CHECK(store.Params() == std::vector<float>(6, -0.25f));
    held.clear();
    // Nothing views either buffer now: steps alternate between two.
    store.Send(sink);
    const void* third = held[0].data();
    held.clear();
    store.Stage(WholeTensor(std::vector<float>(6, 1.f)), 1.f);
    store.Apply(momentum.get(), 1.f);
    store.Send(sink);
    const void* fourth = held[0].data();
    held.clear();
    store.Stage(WholeTensor(std::vector<float>(6, 1.f)), 1.f);
    store.Apply(momentum.get(), 1.f);
    store.Send(sink);
    CHECK(fourth != third);
    CHECK(held[0].data() == third);
    CHECK(store.pending() == 0);
  }
}

TEST_CASE("the model store steps with delayed momentum in place, as ApplyAccumulated does") {
  const size_t n = 10;
  server::ModelStore store(Wave(n, 1.f), 4);
  auto delayed = optim::MakeOptimizer(0.1, 0.9, true, 2, static_cast<int64_t>(n)).value();
  auto reference = optim::MakeOptimizer(0.1, 0.9, true, 2, static_cast<int64_t>(n)).value();
  std::vector<float> params = Wave(n, 1.f);
  for (int step = 0; step < 5; ++step) {
    const std::vector<float> grad = Wave(n, static_cast<float>(step) * 0.3f);
    store.Stage(WholeTensor(grad), 1.f);
    store.Apply(delayed.get(), 0.5f);
    std::vector<float> acc = grad;
    optim::ApplyAccumulated(reference.get(), 0.5f, params, acc);
  }
  CHECK(SameBits(store.Params(), params));
}

}  // namespace
}  // namespace dmlps
