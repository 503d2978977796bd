// Checkpoint files: what is written reads back exactly; damage of any kind
// is refused with DataLoss; a failed write leaves the previous file.
#include "dmlps/server/checkpoint.h"

#include <doctest/doctest.h>
#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "dmlps/optim/optimizer.h"
#include "test_util.h"

namespace dmlps::server {
namespace {

namespace fs = std::filesystem;

Checkpoint Sample(size_t params = 1000) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  auto values = std::make_shared<std::vector<float>>(params);
  for (float& v : *values) v = normal(rng);
  std::vector<float> state(params);
  for (float& v : state) v = normal(rng);
  return {.model = "mlp:16",
          .policy = "lbbsp",
          .optimizer = "momentum",
          .workers = 3,
          .iteration = 42,
          .version = 41,
          .samples = 12345,
          .seconds = 3.25,
          .policy_extra = {20, 20, 24, 16, 5, 0, 1},
          .params = std::move(values),
          .optimizer_state = std::move(state),
          .layout = {}};
}

void CheckSame(const Checkpoint& a, const Checkpoint& b) {
  CHECK(a.model == b.model);
  CHECK(a.policy == b.policy);
  CHECK(a.optimizer == b.optimizer);
  CHECK(a.workers == b.workers);
  CHECK(a.iteration == b.iteration);
  CHECK(a.version == b.version);
  CHECK(a.samples == b.samples);
  CHECK(a.seconds == b.seconds);
  CHECK(a.policy_extra == b.policy_extra);
  CHECK(*a.params == *b.params);
  CHECK(a.optimizer_state == b.optimizer_state);
}

using testing::Slurp;
using testing::TempDir;

TEST_CASE("checkpoint: CRC-32 is the IEEE one zlib computes") {
  const std::string text = "123456789";
  CHECK(Crc32(text) == 0xCBF43926u);
  const std::string bytes = EncodeCheckpoint(Sample(300));
  CHECK(Crc32(bytes) ==
        crc32(0, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
  // Continuing from a prefix's CRC gives the whole one.
  CHECK(Crc32(std::string_view(bytes).substr(100), Crc32(std::string_view(bytes).substr(0, 100))) ==
        Crc32(bytes));
}

// tests/data/format1-initial.ckpt: a file of format 1 as dmlps.write_initial
// writes it (an external model of 3 tensors, 12 floats (i - 5.5) / 4),
// kept in the tree so that any change to the writer or to the checksum that
// would stop existing files from loading fails here.
TEST_CASE("checkpoint: a format 1 file in the tree still loads, its checksum unchanged") {
  const std::string path = std::string(DMLPS_TEST_DATA_DIR) + "/format1-initial.ckpt";
  const std::string bytes = Slurp(path);
  REQUIRE(bytes.size() == 316);
  const uint32_t stored = static_cast<uint32_t>(static_cast<unsigned char>(bytes[312])) |
                          static_cast<uint32_t>(static_cast<unsigned char>(bytes[313])) << 8 |
                          static_cast<uint32_t>(static_cast<unsigned char>(bytes[314])) << 16 |
                          static_cast<uint32_t>(static_cast<unsigned char>(bytes[315])) << 24;
  CHECK(stored == 0xAB64339Eu);
  CHECK(Crc32(std::string_view(bytes).substr(0, 312)) == stored);
  Result<Checkpoint> read = ReadCheckpointFile(path);
  REQUIRE_MESSAGE(read.ok(), read.status().message());
  CHECK(read->model == "external");
  CHECK(read->policy == "initial");
  const std::vector<model::TensorSpec> layout = {
      {"fc.weight", {3, 2}}, {"fc.bias", {3}}, {"bn.running_mean", {3}, true}};
  CHECK(read->layout == layout);
  REQUIRE(read->params->size() == 12);
  for (size_t i = 0; i < 12; ++i) CHECK((*read->params)[i] == (static_cast<float>(i) - 5.5f) / 4);
}

TEST_CASE("checkpoint: a file written reads back exactly, and no temporary file stays") {
  TempDir dir;
  const Checkpoint c = Sample();
  const std::string path = dir.File("run.ckpt");
  REQUIRE(WriteCheckpointFile(path, c).ok());
  Result<Checkpoint> read = ReadCheckpointFile(path);
  REQUIRE(read.ok());
  CheckSame(c, *read);
  CHECK(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()) == 1);
  // Overwritten by a newer one.
  Checkpoint newer = Sample(10);
  newer.iteration = 50;
  REQUIRE(WriteCheckpointFile(path, newer).ok());
  read = ReadCheckpointFile(path);
  REQUIRE(read.ok());
  CHECK(read->iteration == 50);
  CHECK(read->params->size() == 10);
}

TEST_CASE("checkpoint: truncated, corrupt or foreign files are refused with DataLoss") {
  const std::string good = EncodeCheckpoint(Sample(64));
  REQUIRE(DecodeCheckpoint(good, "f").ok());
  // Every cut is refused.
  for (size_t cut = 0; cut < good.size(); cut += 7) {
    Result<Checkpoint> r = DecodeCheckpoint(std::string_view(good).substr(0, cut), "f");
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kDataLoss);
    CHECK(r.status().message().starts_with("f: "));
  }
  Result<Checkpoint> half =
      DecodeCheckpoint(std::string_view(good).substr(0, good.size() / 2), "f");
  CHECK(half.status().message().find("truncated") != std::string::npos);
  // Every single changed byte is refused.
  for (size_t at = 0; at < good.size(); ++at) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x5a);
    Result<Checkpoint> r = DecodeCheckpoint(bad, "f");
    REQUIRE_MESSAGE(!r.ok(), "byte " << at);
    CHECK(r.status().code() == StatusCode::kDataLoss);
  }
  std::string flipped = good;
  flipped[200] ^= 1;
  CHECK(DecodeCheckpoint(flipped, "f").status().message().find("checksum") != std::string::npos);
  CHECK(DecodeCheckpoint("hello, world", "f").status().message().find("not a dmlps checkpoint") !=
        std::string::npos);
  // Another format version: refused by name, even with a valid checksum.
  std::string future = good.substr(0, good.size() - 4);
  future[8] = 2;
  const uint32_t crc = Crc32(future);
  for (int i = 0; i < 4; ++i) future.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
  CHECK(DecodeCheckpoint(future, "f").status().message().find("format 2") != std::string::npos);
  // A checksum that is right over contents that are not: NaN parameters.
  Checkpoint nan = Sample(4);
  auto values = std::make_shared<std::vector<float>>(*nan.params);
  (*values)[2] = std::nanf("");
  nan.params = values;
  CHECK(DecodeCheckpoint(EncodeCheckpoint(nan), "f").status().message().find("NaN") !=
        std::string::npos);
}

TEST_CASE("checkpoint: an external model's layout is recorded and checked against its size") {
  Checkpoint external = Sample(6);
  external.model = "external";
  external.layout = {{"w", {2, 2}}, {"b", {2}}};
  Result<Checkpoint> back = DecodeCheckpoint(EncodeCheckpoint(external), "f");
  REQUIRE(back.ok());
  CheckSame(external, *back);
  CHECK(back->layout == external.layout);
  // A built-in model's checkpoint records none.
  CHECK(DecodeCheckpoint(EncodeCheckpoint(Sample(6)), "f").value().layout.empty());
  // A layout of another size than the parameters, or an impossible one.
  external.layout = {{"w", {2, 3}}, {"b", {2}}};
  Result<Checkpoint> wrong = DecodeCheckpoint(EncodeCheckpoint(external), "f");
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.status().code() == StatusCode::kDataLoss);
  CHECK(wrong.status().message().find("a layout of 8 parameters for a model of 6") !=
        std::string::npos);
  external.layout = {{"w", {6, 0}}};
  CHECK(DecodeCheckpoint(EncodeCheckpoint(external), "f").status().message().find("its layout") !=
        std::string::npos);
}

TEST_CASE("checkpoint: a failed write leaves the previous file and no temporary") {
  TempDir dir;
  const std::string path = dir.File("run.ckpt");
  REQUIRE(WriteCheckpointFile(path, Sample(16)).ok());
  const std::string before = Slurp(path);
  // A folder that does not exist: nothing can be written.
  CHECK(WriteCheckpointFile(dir.File("missing/x.ckpt"), Sample(16)).code() == StatusCode::kIOError);
  // A target the rename cannot replace (a non-empty folder): the temporary
  // file is removed again.
  fs::create_directory(dir.File("busy"));
  std::ofstream(dir.File("busy/f")) << "x";
  Status s = WriteCheckpointFile(dir.File("busy"), Sample(16));
  CHECK(s.code() == StatusCode::kIOError);
  CHECK(Slurp(path) == before);
  CHECK(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()) == 2);
  CHECK(ReadCheckpointFile(dir.File("nothing")).status().code() == StatusCode::kNotFound);
}

TEST_CASE("checkpoint: the momentum optimizer's state goes on where it stood") {
  Result<std::unique_ptr<optim::Optimizer>> a = optim::MakeOptimizer(0.1, 0.9, 3);
  Result<std::unique_ptr<optim::Optimizer>> b = optim::MakeOptimizer(0.1, 0.9, 3);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  std::vector<float> pa{1, 2, 3};
  std::vector<float> g{0.5f, -1, 2};
  (*a)->Step(pa, g, 1);
  std::vector<float> pb = pa;
  REQUIRE((*b)->SetState((*a)->State()).ok());
  (*a)->Step(pa, g, 1);
  (*b)->Step(pb, g, 1);
  CHECK(pa == pb);
  CHECK_FALSE((*b)->SetState(std::vector<float>(2)).ok());
  Result<std::unique_ptr<optim::Optimizer>> sgd = optim::MakeOptimizer(0.1, 0, 3);
  CHECK((*sgd)->State().empty());
  CHECK((*sgd)->SetState({}).ok());
}

}  // namespace
}  // namespace dmlps::server

namespace dmlps::server {
namespace {

TEST_CASE("a sharded server's checkpoint records its shard and slice, and fits no other") {
  Checkpoint slice = Sample(100);
  slice.shard_index = 1;
  slice.shard_count = 3;
  slice.slice_begin = 100;
  slice.model_params = 300;
  Result<Checkpoint> read = DecodeCheckpoint(EncodeCheckpoint(slice), "slice.ckpt");
  REQUIRE(read.ok());
  CheckSame(slice, *read);
  CHECK(read->shard_index == 1);
  CHECK(read->shard_count == 3);
  CHECK(read->slice_begin == 100);
  CHECK(read->model_params == 300);
  CHECK(CheckShardOfCheckpoint(*read, "slice.ckpt", 1, 3, 100, 200, 300).ok());
  // Another index, count, slice or model size: DataLoss (exit 65).
  for (const Status& other : {CheckShardOfCheckpoint(*read, "slice.ckpt", 2, 3, 100, 200, 300),
                              CheckShardOfCheckpoint(*read, "slice.ckpt", 1, 2, 100, 200, 300),
                              CheckShardOfCheckpoint(*read, "slice.ckpt", 1, 3, 101, 201, 300),
                              CheckShardOfCheckpoint(*read, "slice.ckpt", 1, 3, 100, 200, 301)}) {
    CHECK(other.code() == StatusCode::kDataLoss);
    CHECK(other.message().starts_with("slice.ckpt: "));
  }
  // One server's file is shard 0 of 1 holding the whole model.
  Result<Checkpoint> whole = DecodeCheckpoint(EncodeCheckpoint(Sample(100)), "whole.ckpt");
  REQUIRE(whole.ok());
  CHECK(whole->shard_count == 1);
  CHECK(whole->model_params == 100);
  CHECK(CheckShardOfCheckpoint(*whole, "whole.ckpt", 0, 1, 0, 100, 100).ok());
  CHECK(CheckShardOfCheckpoint(*whole, "whole.ckpt", 0, 2, 0, 50, 100).code() ==
        StatusCode::kDataLoss);
}

TEST_CASE("a checkpoint whose slice does not fit its model is refused") {
  Checkpoint slice = Sample(100);
  slice.shard_index = 2;
  slice.shard_count = 2;  // index beyond the count
  CHECK(DecodeCheckpoint(EncodeCheckpoint(slice), "x").status().code() == StatusCode::kDataLoss);
  slice.shard_index = 1;
  slice.slice_begin = 250;
  slice.model_params = 300;  // [250, 350) of 300
  CHECK(DecodeCheckpoint(EncodeCheckpoint(slice), "x").status().code() == StatusCode::kDataLoss);
}

}  // namespace
}  // namespace dmlps::server
