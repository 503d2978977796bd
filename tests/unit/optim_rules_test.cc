// The server's optimizer settings: schedules, parameter groups, torch.optim's
// SGD and Adam(W) rules sliced as the model store slices them, clipping by
// the global norm in the store, and their state in checkpoints. That the
// rules match torch.optim step for step is tests/python/
// test_optimizer_matches_torch.py's to show, against PyTorch itself.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <numbers>
#include <vector>

#include "dmlps/optim/optimizer.h"
#include "dmlps/optim/rules.h"
#include "dmlps/optim/schedule.h"
#include "dmlps/optim/settings.h"
#include "dmlps/server/checkpoint.h"
#include "server/model_store.h"
#include "tensor_test_util.h"

namespace dmlps {
namespace {

std::vector<float> RulesWave(size_t n, float phase) {
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = std::sin(0.37f * static_cast<float>(i) + phase);
  return values;
}

std::vector<model::TensorSpec> RulesLayout() {
  return {{"fc0.weight", {4, 3}}, {"fc0.bias", {4}}, {"bn.weight", {4}}, {"fc1.weight", {2, 4}}};
}

}  // namespace

TEST_CASE("optim: schedules give torch's factors, warmup first") {
  auto step = optim::ParseSchedule("step:3:0.5", 0);
  REQUIRE(step.ok());
  CHECK(step->Factor(0) == 1);
  CHECK(step->Factor(2) == 1);
  CHECK(step->Factor(3) == 0.5);
  CHECK(step->Factor(7) == 0.25);
  auto multi = optim::ParseSchedule("multistep:2,5:0.1", 0);
  REQUIRE(multi.ok());
  CHECK(multi->Factor(1) == 1);
  CHECK(multi->Factor(2) == doctest::Approx(0.1));
  CHECK(multi->Factor(5) == doctest::Approx(0.01));
  auto cosine = optim::ParseSchedule("cosine:10:0.2", 4);
  REQUIRE(cosine.ok());
  CHECK(cosine->Factor(0) == doctest::Approx(0.25));  // warmup: (k + 1) / 4
  CHECK(cosine->Factor(3) == 1);
  CHECK(cosine->Factor(4) == 1);  // the decay's t = 0
  CHECK(cosine->Factor(9) == doctest::Approx(0.2 + 0.8 * (1 + std::cos(std::numbers::pi / 2)) / 2));
  CHECK(cosine->Factor(14) == doctest::Approx(0.2));
  CHECK(cosine->Factor(1000) == doctest::Approx(0.2));  // held at the floor after T
  auto linear = optim::ParseSchedule("linear:4", 0);
  REQUIRE(linear.ok());
  CHECK(linear->Factor(2) == doctest::Approx(0.5));
  CHECK(linear->Factor(9) == 0);
  CHECK(optim::ParseSchedule("constant", 0)->Factor(123) == 1);
  CHECK(cosine->Spec() == "cosine:10:0.2");
  for (const char* bad : {"", "cosine", "cosine:0", "cosine:10:2", "step:3", "step:0:0.5",
                          "step:3:0", "multistep:5,2:0.1", "multistep::0.1", "warm", "linear:x",
                          "constant:1", "cosine:10:0.5:1"}) {
    CAPTURE(bad);
    CHECK_FALSE(optim::ParseSchedule(bad, 0).ok());
  }
  CHECK_FALSE(optim::ParseSchedule("constant", -1).ok());
}

TEST_CASE("optim: parameter groups take the first matching pattern, over a shard's slice too") {
  optim::OptimizerSettings settings;
  settings.lr = 0.1;
  settings.weight_decay = 0.01;
  settings.groups = {"*.bias|bn.*:weight_decay=0", "fc*:lr=0.5"};
  auto ranges = optim::ResolveGroups(settings, RulesLayout(), 0, 28);
  REQUIRE(ranges.ok());
  // fc0.weight [0,12) lr 0.5 (the second group); fc0.bias and bn.weight
  // [12,20) no decay (the first group wins over the second for fc0.bias);
  // fc1.weight [20,28) lr 0.5.
  const std::vector<optim::GroupRange> want = {
      {0, 12, 0.5, 0.01}, {12, 20, 0.1, 0}, {20, 28, 0.5, 0.01}};
  CHECK(*ranges == want);
  // A shard holding [10, 22) sees the same groups, shifted to its slice.
  auto slice = optim::ResolveGroups(settings, RulesLayout(), 10, 22);
  REQUIRE(slice.ok());
  const std::vector<optim::GroupRange> shifted = {
      {0, 2, 0.5, 0.01}, {2, 10, 0.1, 0}, {10, 12, 0.5, 0.01}};
  CHECK(*slice == shifted);
  settings.groups = {"*.biass:weight_decay=0"};
  auto typo = optim::ResolveGroups(settings, RulesLayout(), 0, 28);
  REQUIRE_FALSE(typo.ok());
  CHECK(typo.status().message().find("no tensor of the model matches") != std::string::npos);
  CHECK(typo.status().message().find("fc0.bias") != std::string::npos);
  for (const char* bad : {"*.bias", "*.bias:wd=0", "*.bias:lr=0", "*.bias:lr=-1", "|x:lr=1",
                          "*.bias:weight_decay=nan"}) {
    CAPTURE(bad);
    settings.groups = {bad};
    CHECK_FALSE(optim::SettingsProblems(settings).empty());
  }
}

TEST_CASE("optim: settings refuse what torch.optim refuses, naming the flag") {
  optim::OptimizerSettings settings;
  CHECK(optim::SettingsProblems(settings).empty());
  CHECK(settings.Plain());
  settings.algorithm = "lion";
  CHECK(optim::SettingsProblems(settings).front().find("--optimizer") != std::string::npos);
  settings.algorithm = "sgd";
  settings.nesterov = true;  // without momentum
  CHECK(optim::SettingsProblems(settings).front().find("--nesterov") != std::string::npos);
  settings.nesterov = false;
  settings.algorithm = "adamw";
  settings.momentum = 0.9;
  CHECK(optim::SettingsProblems(settings).front().find("--momentum") != std::string::npos);
  settings.momentum = 0;
  settings.beta2 = 1;
  CHECK(optim::SettingsProblems(settings).front().find("--betas") != std::string::npos);
  settings.beta2 = 0.999;
  CHECK_FALSE(settings.Plain());
  CHECK(optim::SettingsProblems(settings).empty());
}

TEST_CASE("optim: torch's rules step a model in slices as they step it whole") {
  const size_t n = 28;
  for (const char* algorithm : {"sgd", "adam", "adamw"}) {
    CAPTURE(algorithm);
    optim::OptimizerSettings settings;
    settings.algorithm = algorithm;
    settings.lr = 0.05;
    settings.momentum = settings.algorithm == "sgd" ? 0.9 : 0;
    settings.dampening = settings.algorithm == "sgd" ? 0.1 : 0;
    settings.weight_decay = 0.01;
    settings.groups = {"*.bias:weight_decay=0:lr=0.2"};
    settings.schedule = "cosine:5";
    settings.warmup = 2;
    auto whole = optim::MakeOptimizer(settings, RulesLayout(), 0, static_cast<int64_t>(n));
    auto sliced = optim::MakeOptimizer(settings, RulesLayout(), 0, static_cast<int64_t>(n));
    REQUIRE(whole.ok());
    REQUIRE(sliced.ok());
    CHECK((*whole)->Name() == (settings.algorithm == "sgd" ? "momentum" : settings.algorithm));
    std::vector<float> a = RulesWave(n, 0.5f), b = a;
    for (int k = 0; k < 6; ++k) {
      const std::vector<float> grad = RulesWave(n, static_cast<float>(k));
      (*whole)->Step(a, grad, 0.5f);
      const optim::StepInfo step = (*sliced)->Begin(0.5f);
      CHECK(step.number == k + 1);
      for (const auto& [from, to] : {std::pair<size_t, size_t>{0, 13}, {13, n}}) {
        const std::span<const float> g(grad.data() + from, to - from);
        CHECK((*sliced)->StepStaysFinite(std::span<const float>(b.data() + from, to - from), g,
                                         step, static_cast<int64_t>(from)));
        (*sliced)->StepSlice(std::span<float>(b.data() + from, to - from), g, step,
                             static_cast<int64_t>(from));
      }
    }
    CHECK(testing::SameBits(a, b));
    CHECK((*whole)->State() == (*sliced)->State());
    CHECK((*whole)->steps() == 6);
    // The state goes into a new optimizer whole, or is refused.
    auto restored = optim::MakeOptimizer(settings, RulesLayout(), 0, static_cast<int64_t>(n));
    REQUIRE(restored.ok());
    CHECK((*restored)->SetState((*whole)->State()).ok());
    CHECK_FALSE((*restored)->SetState(std::vector<float>(3, 0.f)).ok());
  }
}

TEST_CASE("optim: adam's first step moves each parameter by lr against its gradient's sign") {
  optim::Adam adam({{0, 3, 0.01, 0}}, /*decoupled=*/true, 0.9, 0.999, 1e-8);
  std::vector<float> params{1.f, 1.f, 1.f};
  const std::vector<float> grad{2.f, -0.5f, 0.f};
  adam.Step(params, grad, 1.f);
  // m / (1 - b1) = g and sqrt(v / (1 - b2)) = |g|: the step is lr sign(g).
  CHECK(params[0] == doctest::Approx(0.99f).epsilon(1e-6));
  CHECK(params[1] == doctest::Approx(1.01f).epsilon(1e-6));
  CHECK(params[2] == 1.f);
  // A step that overflows is seen before it is taken.
  const std::vector<float> huge{3e38f, 3e38f, 3e38f};
  CHECK_FALSE(adam.StepStaysFinite(params, huge, adam.Begin(10.f), 0));
  // Adam's state is two floats a parameter, and a negative second moment is refused.
  CHECK(adam.State().size() == 6);
  CHECK_FALSE(adam.SetState(std::vector<float>{0, 0, 0, 1, -1, 1}).ok());
}

TEST_CASE("optim: sgd with no decay, dampening or schedule steps as plain momentum, bit for bit") {
  const size_t n = 40;
  optim::TorchSgd torch_sgd({{0, 40, 0.1, 0}}, 0.9, 0, true);
  auto momentum = optim::MakeOptimizer(0.1, 0.9, true, static_cast<int64_t>(n));
  REQUIRE(momentum.ok());
  std::vector<float> a = RulesWave(n, 1.f), b = a;
  for (int k = 0; k < 5; ++k) {
    const std::vector<float> grad = RulesWave(n, 0.3f * static_cast<float>(k));
    torch_sgd.Step(a, grad, 0.25f);
    (*momentum)->Step(b, grad, 0.25f);
  }
  CHECK(testing::SameBits(a, b));
}

TEST_CASE(
    "model store: a clipped step scales the mean gradient to the norm, whatever the threads") {
  const size_t n = 70000;  // several lanes of several blocks
  const std::vector<float> grad = RulesWave(n, 0.1f);
  double squares = 0;
  for (const float g : grad) squares += static_cast<double>(g) * g;
  const double norm = 0.5 * std::sqrt(squares);  // the step's gradient is 0.5 * acc
  std::vector<std::vector<float>> results;
  for (const int64_t threads : {1, 2}) {
    server::ModelStore store(std::vector<float>(n, 1.f), 4096, threads);
    store.set_clip_norm(2.0);
    auto sgd = optim::MakeOptimizer(1.0, 0, static_cast<int64_t>(n));
    REQUIRE(sgd.ok());
    store.Stage(testing::WholeTensor(grad), 1.f);
    store.Apply(sgd->get(), 0.5f);
    REQUIRE(store.pending() == 0);
    results.push_back(store.Params());
  }
  CHECK(testing::SameBits(results[0], results[1]));
  const double factor = 2.0 / (norm + 1e-6);
  REQUIRE(factor < 1);
  double moved = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = 1.0 - results[0][i];
    moved += d * d;
    CHECK(d == doctest::Approx(0.5 * factor * grad[i]).epsilon(1e-5));
  }
  CHECK(std::sqrt(moved) == doctest::Approx(2.0).epsilon(1e-5));
  // A gradient already shorter than the bound is taken as it is.
  server::ModelStore store(std::vector<float>(4, 1.f), 4096, 1);
  store.set_clip_norm(100.0);
  auto sgd = optim::MakeOptimizer(1.0, 0, 4);
  REQUIRE(sgd.ok());
  store.Stage(testing::WholeTensor({1.f, 2.f, 3.f, 4.f}), 1.f);
  store.Apply(sgd->get(), 1.f);
  CHECK(store.Params() == std::vector<float>{0.f, -1.f, -2.f, -3.f});
}

TEST_CASE("checkpoint: Adam's two moments and the optimizer's step count read back") {
  server::Checkpoint checkpoint;
  checkpoint.model = "external";
  checkpoint.policy = "bsp";
  checkpoint.optimizer = "adamw";
  checkpoint.params = std::make_shared<const std::vector<float>>(RulesWave(10, 0.f));
  checkpoint.optimizer_state = RulesWave(20, 1.f);
  for (size_t i = 10; i < 20; ++i)
    checkpoint.optimizer_state[i] = std::abs(checkpoint.optimizer_state[i]);
  checkpoint.optimizer_steps = 1234;
  auto back = server::DecodeCheckpoint(server::EncodeCheckpoint(checkpoint), "test");
  REQUIRE(back.ok());
  CHECK(back->optimizer_state == checkpoint.optimizer_state);
  CHECK(back->optimizer_steps == 1234);
  checkpoint.optimizer_state.resize(15);  // neither one nor two floats a parameter
  CHECK_FALSE(server::DecodeCheckpoint(server::EncodeCheckpoint(checkpoint), "test").ok());
  // With module state ending the model, the optimizer's state covers the
  // parameters before it only.
  checkpoint.layout = {{"w", {7}}, {"bn.running_mean", {3}, true}};
  checkpoint.optimizer_state.assign(14, 0.f);
  CHECK(server::DecodeCheckpoint(server::EncodeCheckpoint(checkpoint), "test").ok());
  checkpoint.optimizer_state.assign(20, 0.f);
  CHECK_FALSE(server::DecodeCheckpoint(server::EncodeCheckpoint(checkpoint), "test").ok());
}

}  // namespace dmlps

namespace dmlps {

TEST_CASE("layout: module state comes after every parameter, and counts apart") {
  std::vector<model::TensorSpec> layout = {{"w", {2, 3}},
                                           {"b", {2}},
                                           {"bn.running_mean", {2}, true},
                                           {"bn.num_batches_tracked", {1}, true}};
  auto floats = model::ValidateLayout(layout);
  REQUIRE(floats.ok());
  CHECK(*floats == 11);
  CHECK(model::StateFloats(layout) == 3);
  std::vector<model::TensorSpec> misplaced = layout;
  std::swap(misplaced[1], misplaced[2]);
  auto refused = model::ValidateLayout(misplaced);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("after module state") != std::string::npos);
  CHECK_FALSE(model::ValidateLayout(std::vector<model::TensorSpec>{{"s", {2}, true}}).ok());
  std::vector<model::TensorSpec> as_param = layout;
  as_param[2].state = false;
  as_param[3].state = false;
  CHECK(model::FirstLayoutDifference(as_param, layout).find("module state") != std::string::npos);
}

TEST_CASE("model store: module state takes the weighted mean of the pushes, never a step") {
  // 30000 parameters then 40000 floats of state: lanes of 4096 floats, one
  // of them holding both.
  const size_t params = 30000, state = 40000, n = params + state;
  const std::vector<float> a = RulesWave(n, 0.2f), b = RulesWave(n, 1.3f);
  for (const bool fused : {true, false}) {
    for (const int64_t threads : {1, 2}) {
      CAPTURE(fused);
      CAPTURE(threads);
      server::ModelStore store(std::vector<float>(n, 1.f), 4096, threads);
      store.set_state_begin(static_cast<int64_t>(params));
      optim::OptimizerSettings settings;
      settings.lr = 0.5;
      settings.momentum = 0.9;
      settings.weight_decay = fused ? 0 : 0.01;  // plain momentum steps fused
      auto optimizer = optim::MakeOptimizer(settings, {}, 0, static_cast<int64_t>(params));
      REQUIRE(optimizer.ok());
      REQUIRE(optim::StepsOutOfPlace(optimizer->get()) == fused);
      store.Stage(testing::WholeTensor(a), 1.f);
      store.Stage(testing::WholeTensor(b), 3.f);
      store.Apply(optimizer->get(), 0.25f);
      std::vector<float> got = store.Params();
      for (size_t i = params; i < n; i += 997) {
        CHECK(got[i] == doctest::Approx((a[i] + 3 * b[i]) / 4).epsilon(1e-6));
      }
      // The parameters took the optimizer's first step: lr · (g + wd θ).
      for (size_t i = 0; i < params; i += 997) {
        const double g = (a[i] + 3 * b[i]) / 4 + settings.weight_decay;
        CHECK(got[i] == doctest::Approx(1 - 0.5 * g).epsilon(1e-5));
      }
      // An apply with nothing staged leaves the state; a refused one leaves all.
      store.Apply(optimizer->get(), 0.25f);
      CHECK(store.Params()[params + 5] == got[params + 5]);
      got = store.Params();
      std::vector<float> huge(n, 3e38f);
      store.Stage(testing::WholeTensor(huge), 1.f);
      store.Apply(optimizer->get(), 100.f);  // the gradient overflows
      CHECK(store.refused() == 1);
      CHECK(testing::SameBits(store.Params(), got));
      // The next push's state is taken as it is: nothing of the refused one stays.
      store.Stage(testing::WholeTensor(a), 2.f);
      store.Apply(optimizer->get(), 0.5f);
      CHECK(store.Params()[n - 1] == doctest::Approx(a[n - 1]).epsilon(1e-6));
    }
  }
}

}  // namespace dmlps

namespace dmlps {

TEST_CASE("model store: slices clipped by the norm over all of them step as the whole model") {
  const size_t n = 50000, half = 20000;
  const std::vector<float> grad = RulesWave(n, 0.7f);
  server::ModelStore whole(std::vector<float>(n, 1.f), 4096, 1);
  whole.set_clip_norm(3.0);
  auto sgd_whole = optim::MakeOptimizer(0.5, 0.9, static_cast<int64_t>(n));
  REQUIRE(sgd_whole.ok());
  // Two slices, each reporting its sum of squares; the step waits for the total.
  server::ModelStore first(std::vector<float>(half, 1.f), 4096, 1);
  server::ModelStore second(std::vector<float>(n - half, 1.f), 4096, 2);
  std::vector<std::pair<int64_t, double>> reports;
  for (server::ModelStore* slice : {&first, &second}) {
    slice->set_clip_norm(3.0);
    slice->set_shared_norm(
        [&reports](int64_t step, double squares) { reports.emplace_back(step, squares); });
  }
  auto sgd_first = optim::MakeOptimizer(0.5, 0.9, static_cast<int64_t>(half));
  auto sgd_second = optim::MakeOptimizer(0.5, 0.9, static_cast<int64_t>(n - half));
  REQUIRE(sgd_first.ok());
  REQUIRE(sgd_second.ok());
  for (int step = 1; step <= 3; ++step) {
    whole.Stage(testing::WholeTensor(grad), 1.f);
    whole.Apply(sgd_whole->get(), 0.5f);
    first.Stage(testing::WholeTensor({grad.begin(), grad.begin() + half}), 1.f);
    first.Apply(sgd_first->get(), 0.5f);
    second.Stage(testing::WholeTensor({grad.begin() + half, grad.end()}), 1.f);
    second.Apply(sgd_second->get(), 0.5f);
    REQUIRE(reports.size() == 2);
    CHECK(first.pending() > 0);  // waiting for the whole model's norm
    CHECK(reports[0].first == step);
    const double total = reports[0].second + reports[1].second;
    first.TakeGlobalSquares(step, total);
    second.TakeGlobalSquares(step + 100, total);  // no step waits for this one
    CHECK(second.pending() > 0);
    second.TakeGlobalSquares(step, total);
    CHECK(first.pending() == 0);
    CHECK(second.pending() == 0);
    reports.clear();
  }
  std::vector<float> joined = first.Params();
  const std::vector<float> rest = second.Params();
  joined.insert(joined.end(), rest.begin(), rest.end());
  const std::vector<float> want = whole.Params();
  for (size_t i = 0; i < n; i += 499) CHECK(joined[i] == doctest::Approx(want[i]).epsilon(1e-6));
  CHECK(want[7] != 1.f);
}

}  // namespace dmlps
