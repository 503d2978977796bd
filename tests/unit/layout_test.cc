#include "dmlps/model/layout.h"

#include <doctest/doctest.h>

#include "dmlps/model/model.h"
#include "dmlps/worker/worker.h"

namespace dmlps::model {
namespace {

std::vector<TensorSpec> Mlp() { return {{"fc0.weight", {16, 4}}, {"fc0.bias", {16}}}; }

TEST_CASE("a valid layout's parameters are the sum of its tensors' sizes") {
  Result<int64_t> n = ValidateLayout(Mlp());
  REQUIRE(n.ok());
  CHECK(*n == 16 * 4 + 16);
  const std::vector<TensorSpec> conv = {{"conv.weight", {8, 3, 5, 5}}, {"conv.bias", {8}}};
  CHECK(ValidateLayout(conv).value() == 8 * 3 * 5 * 5 + 8);
}

TEST_CASE("an impossible layout is refused, naming the offending tensor") {
  CHECK(ValidateLayout({}).status().message().find("no tensor") != std::string::npos);
  std::vector<TensorSpec> bad = Mlp();
  bad[1].shape = {0};
  Result<int64_t> n = ValidateLayout(bad);
  REQUIRE_FALSE(n.ok());
  CHECK(n.status().message().find("tensor 1 'fc0.bias'") != std::string::npos);
  bad[1].shape = {-3};
  CHECK_FALSE(ValidateLayout(bad).ok());
  bad[1].shape = {};
  CHECK(ValidateLayout(bad).status().message().find("0 dimensions") != std::string::npos);
  bad[1].shape = std::vector<int64_t>(kMaxTensorDims + 1, 1);
  CHECK_FALSE(ValidateLayout(bad).ok());
  bad[1] = {"", {2}};
  CHECK(ValidateLayout(bad).status().message().find("tensor 1: a name of 0 bytes") !=
        std::string::npos);
  bad[1] = {std::string(kMaxTensorNameBytes + 1, 'x'), {2}};
  CHECK_FALSE(ValidateLayout(bad).ok());
  std::vector<TensorSpec> many(kMaxLayoutTensors + 1, TensorSpec{"t", {1}});
  CHECK_FALSE(ValidateLayout(many).ok());
  CHECK(ValidateLayout(std::vector<TensorSpec>(kMaxLayoutTensors, TensorSpec{"t", {1}})).ok());
}

TEST_CASE("a layout too large is refused before any product overflows") {
  // 2^31 * 2^31 * 2^31 would overflow int64_t; the check stops first.
  const int64_t big = int64_t{1} << 31;
  CHECK_FALSE(ValidateLayout(std::vector<TensorSpec>{{"w", {big, big, big}}}).ok());
  CHECK(ValidateLayout(std::vector<TensorSpec>{{"w", {kMaxLayoutParams}}}).ok());
  CHECK_FALSE(ValidateLayout(std::vector<TensorSpec>{{"w", {kMaxLayoutParams + 1}}}).ok());
  // Each tensor fits, their sum does not.
  Result<int64_t> sum =
      ValidateLayout(std::vector<TensorSpec>{{"a", {kMaxLayoutParams}}, {"b", {1}}});
  REQUIRE_FALSE(sum.ok());
  CHECK(sum.status().message().find("tensor 1 'b'") != std::string::npos);
}

TEST_CASE("FirstLayoutDifference names the first tensor that differs, or the count") {
  CHECK(FirstLayoutDifference(Mlp(), Mlp()).empty());
  std::vector<TensorSpec> other = Mlp();
  other[0].shape = {32, 4};
  other[1].shape = {32};
  CHECK(FirstLayoutDifference(other, Mlp()) ==
        "tensor 0 'fc0.weight': shape [32,4], the model has [16,4]");
  other = Mlp();
  other[1].name = "fc0.b";
  CHECK(FirstLayoutDifference(other, Mlp()) ==
        "tensor 1 'fc0.b': the model's tensor 1 is 'fc0.bias'");
  other = Mlp();
  other.push_back({"fc1.weight", {2, 16}});
  CHECK(FirstLayoutDifference(other, Mlp()) == "3 tensors, the model has 2");
  CHECK(FirstLayoutDifference(Mlp(), other) == "2 tensors, the model has 3");
}

TEST_CASE("a built-in model's layout covers exactly its parameters, in order") {
  for (const char* text : {"softmax", "mlp:128", "mlp:64,32", "cnn:4,8,32"}) {
    CAPTURE(text);
    Result<ModelSpec> spec = ParseModelSpec(text, 784, 10);
    REQUIRE(spec.ok());
    const std::vector<TensorSpec> layout = LayoutOf(*spec);
    Result<int64_t> n = ValidateLayout(layout);
    REQUIRE(n.ok());
    CHECK(*n == Model(*spec).num_params());
    CHECK(layout.back().name.ends_with(".bias"));
    CHECK(layout.back().shape == std::vector<int64_t>{10});
  }
  const std::vector<TensorSpec> softmax = LayoutOf(ParseModelSpec("softmax", 784, 10).value());
  CHECK(softmax == std::vector<TensorSpec>{{"fc0.weight", {10, 784}}, {"fc0.bias", {10}}});
}

TEST_CASE("a worker's own layout needs as many initial values as parameters") {
  worker::WorkerConfig config;
  CHECK(worker::ValidateConfig(config).empty());
  config.layout = Mlp();
  CHECK(worker::ValidateConfig(config).size() == 1);  // no values
  config.initial_values = std::make_shared<const std::vector<float>>(80, 0.f);
  CHECK(worker::ValidateConfig(config).empty());
  config.initial_values = std::make_shared<const std::vector<float>>(79, 0.f);
  REQUIRE(worker::ValidateConfig(config).size() == 1);
  CHECK(worker::ValidateConfig(config)[0] == "the layout has 80 parameters, the initial values 79");
  config.layout[0].shape = {0, 4};
  CHECK(worker::ValidateConfig(config)[0].starts_with("the layout: tensor 0 'fc0.weight'"));
}

}  // namespace
}  // namespace dmlps::model
