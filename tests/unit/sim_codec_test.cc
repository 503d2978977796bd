// The simulator under push and pull codecs (SimConfig::push_codec,
// pull_codec; docs/compression.md, "In the simulator"): messages weigh their
// encoded size, links take that long to carry them, and pushes reach the
// model through each worker's error feedback.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "dmlps/compress/compress.h"
#include "dmlps/sim/sim.h"
#include "sim/message.h"
#include "sim_test_util.h"

namespace dmlps::sim {
namespace {

compress::Codec Parsed(const std::string& name) { return compress::ParseCodec(name).value(); }

// BSP on the separable data, mlp:32 (4 features, 2 classes: 226 parameters),
// 4 workers unless told, each step 1 ms, links of `gbps`, 10 µs one way.
struct CodecFixture {
  SimConfig Config(const std::string& push, const std::string& pull, int64_t iterations,
                   double gbps = 0, int64_t workers = 4) const {
    SimConfig c = SimJob("bsp", workers, 16, "mlp:32");
    c.stragglers.assign(static_cast<size_t>(workers), worker::StragglerSpec{});
    OnlyStepsAndLatency(1e-3, 0, 10e-6, &c);
    c.network.link_gbps = gbps;
    c.job.max_iterations = iterations;
    c.job.eval_every = 10;
    c.push_codec = Parsed(push);
    c.pull_codec = Parsed(pull);
    return c;
  }
  SimReport Run(const SimConfig& c) const {
    Result<SimReport> r = Simulate(c, train, test);
    REQUIRE(r.ok());
    REQUIRE(r->failure.empty());
    return *r;
  }

  data::Dataset train = Separable(2000, 1);
  data::Dataset test = Separable(500, 2);
};

TEST_CASE("sim codecs: a push weighs its header and its encoded payload") {
  const CodecFixture f;
  constexpr int64_t kParams = 4 * 32 + 32 + 32 * 2 + 2;
  REQUIRE(model::Model(f.Config("none", "none", 1).model).num_params() == kParams);
  // Bytes of the 226 floats, by hand from docs/compression.md's table.
  const std::vector<std::pair<std::string, int64_t>> sizes = {
      {"none", 4 * kParams},
      {"fp16", 2 * kParams},
      {"bf16", 2 * kParams},
      {"int8", 4 + kParams},      // one block of 256
      {"topk:0.1", 4 + 6 * 23}};  // one segment, 23 of 226
  for (const auto& entry : sizes) {
    const std::string& codec = entry.first;
    CAPTURE(codec);
    CHECK(compress::EncodedBytes(Parsed(codec), kParams) == static_cast<size_t>(entry.second));
    // The pull codec does not change what a worker sends.
    const SimReport r = f.Run(f.Config(codec, "int8", 20));
    double steps = 0;
    for (const WorkerStats& w : r.workers) steps += static_cast<double>(w.steps);
    steps /= static_cast<double>(r.workers.size());
    CHECK(steps == 20);
    // Under BSP each push is followed at once by a pull, a bare header.
    CHECK(r.bytes_per_worker ==
          doctest::Approx(steps * static_cast<double>(kHeaderBytes + entry.second + kHeaderBytes))
              .epsilon(1e-12));
  }
}

TEST_CASE("sim codecs: links carry a push and a model in their encoded time") {
  const CodecFixture f;
  // One worker, whose messages wait for no other's; 10 Mbit/s: a dense push
  // takes about 0.8 ms.
  constexpr double kGbps = 0.01;
  constexpr int64_t kParams = 226;
  // An iteration, from one evaluation to the next: a step (1 ms); the push
  // and, behind it on the worker's link, the pull's header; then the model
  // back; two latencies (the push's overlaps the pull's transfer).
  auto cycle = [&f](const std::string& push, const std::string& pull) {
    SimConfig c = f.Config(push, pull, 8, kGbps, 1);
    c.job.eval_every = 1;
    const SimReport r = f.Run(c);
    REQUIRE(r.curve.size() == 9);
    return r.curve[8].seconds - r.curve[7].seconds;
  };
  auto expected = [](const std::string& push, const std::string& pull) {
    const auto bytes =
        MessageBytes(Parsed(push), kParams) + kHeaderBytes + MessageBytes(Parsed(pull), kParams);
    return 1e-3 + 2 * 10e-6 + static_cast<double>(bytes) * 8 / (kGbps * 1e9);
  };
  for (const auto& pair : std::vector<std::pair<std::string, std::string>>{
           {"none", "none"}, {"int8", "none"}, {"none", "fp16"}, {"topk:0.01", "int8"}}) {
    const std::string& push = pair.first;
    const std::string& pull = pair.second;
    CAPTURE(push);
    CAPTURE(pull);
    CHECK(cycle(push, pull) == doctest::Approx(expected(push, pull)).epsilon(1e-9));
  }
  // int8 both ways: (96 + 230) + 96 + (96 + 230) bytes a cycle, against
  // (96 + 904) + 96 + (96 + 904) dense.
  CHECK(expected("none", "none") - expected("int8", "int8") ==
        doctest::Approx(2 * 674 * 8 / (kGbps * 1e9)));
}

TEST_CASE("sim codecs: pushes reach the model through the workers' error feedback") {
  const CodecFixture f;
  const SimReport dense = f.Run(f.Config("none", "none", 60));
  for (const std::string codec : {"fp16", "int8"}) {
    CAPTURE(codec);
    SimConfig c = f.Config(codec, "none", 60);
    const SimReport r = f.Run(c);
    REQUIRE(r.curve.size() == dense.curve.size());
    // The codec's loss reaches the model: the curves part...
    CHECK(r.curve.back().loss != dense.curve.back().loss);
    // ...but hardly, at these codecs' precision.
    CHECK(r.curve.back().accuracy > 0.9);
    CHECK(r.curve.back().loss < 1.1 * dense.curve.back().loss);
    // With shards, each slice of a push is encoded on its own: it trains too.
    c.shards = 3;
    CHECK(f.Run(c).curve.back().accuracy > 0.9);
  }
  // Top-k sends a tenth of each push; what it leaves, error feedback sends
  // later, so the model gets there, later than dense (0.64 at 60 iterations).
  SimConfig c = f.Config("topk:0.1", "none", 300);
  CHECK(f.Run(c).curve.back().accuracy > 0.9);
  c.shards = 3;
  CHECK(f.Run(c).curve.back().accuracy > 0.9);
  // Under none the payload is the gradient itself, bit for bit.
  const SimReport again = f.Run(f.Config("none", "int8", 60));
  CHECK(again.curve.back().loss == dense.curve.back().loss);
}

TEST_CASE("sim codecs: a codec built by hand that ParseCodec would refuse is a config problem") {
  const CodecFixture f;
  SimConfig c = f.Config("none", "none", 10);
  c.push_codec = compress::Codec{compress::Kind::kTopK, 0};
  c.pull_codec = compress::Codec{compress::Kind::kTopK, 2};
  const std::vector<std::string> problems = ValidateSimConfig(c);
  REQUIRE(problems.size() == 2);
  CHECK(problems[0].starts_with("push codec: "));
  CHECK(problems[1].starts_with("pull codec: "));
  CHECK(Simulate(c, f.train, f.test).status().code() == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dmlps::sim
