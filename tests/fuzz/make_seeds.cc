// Writes the seed corpus of the fuzz targets: small valid inputs for each,
// made with the library's own encoders where it has them.
//
//   dmlps-fuzz-make-seeds DIR    writes DIR/{codec,idx,libsvm,trace,checkpoint,compress}/NAME
//
// tests/fuzz/corpus holds what this wrote; run it again after a format
// changes and commit the result.
#include <zlib.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "../unit/message_test_util.h"
#include "dmlps/compress/compress.h"
#include "dmlps/proto/codec.h"
#include "dmlps/server/checkpoint.h"
#include "dmlps/trace/trace.h"
#include "fuzz_util.h"

namespace dmlps::fuzz {
namespace {

namespace fs = std::filesystem;
using proto::Body;

bool Write(const fs::path& path, std::string_view bytes) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    std::fprintf(stderr, "dmlps-fuzz-make-seeds: error: cannot create %s\n", path.c_str());
    return false;
  }
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  return std::fclose(file) == 0 && ok;
}

std::string FloatBytes(const std::vector<float>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

std::string Header(const Body& body) {
  const zmq::message_t frame = proto::EncodeHeader(body);
  return std::string(static_cast<const char*>(frame.data()), frame.size());
}

// Builds a codec input: messages of frames, in the framing of fuzz_util.h.
class CodecSeed {
 public:
  explicit CodecSeed(uint8_t options) { bytes_.push_back(static_cast<char>(options)); }
  // One message: optional envelope frames, the header, then payload frames.
  CodecSeed& Add(const Body& body, const std::vector<std::string>& payload = {},
                 const std::vector<std::string>& envelope = {}) {
    for (const std::string& e : envelope) AppendFrame(e, false, &bytes_);
    AppendFrame(Header(body), payload.empty(), &bytes_);
    for (size_t i = 0; i < payload.size(); ++i) {
      AppendFrame(payload[i], i + 1 == payload.size(), &bytes_);
    }
    return *this;
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

std::vector<std::pair<std::string, std::string>> CodecSeeds() {
  constexpr uint8_t kRouter = 1;  // header frame at index 1, after the identity
  constexpr uint8_t kZeroCopy = 4;
  constexpr uint8_t kExclude = 8;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();

  // The messages codec_test.cc round-trips.
  const proto::Hello hello = testing::SampleHello();
  const proto::Welcome welcome = testing::SampleWelcome();
  const proto::Model model{.version = 3, .num_params = 6};
  const proto::Push push = testing::SamplePush();
  proto::Push streamed = push;
  streamed.num_params = 10;
  streamed.chunks = 3;
  streamed.chunk_floats = 4;
  const proto::Model streamed_model{
      .version = 8, .num_params = 7, .batch = 32, .token = 2, .chunks = 2, .chunk_floats = 4};

  std::vector<std::pair<std::string, std::string>> seeds;
  seeds.emplace_back("hello", CodecSeed(0).Add(hello).bytes());
  seeds.emplace_back("welcome", CodecSeed(0).Add(welcome).bytes());
  seeds.emplace_back("pull", CodecSeed(0).Add(proto::Pull{12}).bytes());
  seeds.emplace_back(
      "model-inline",
      CodecSeed(0).Add(model, {FloatBytes({1, 2, 3, 4}), FloatBytes({-0.5f, 1e-3f})}).bytes());
  seeds.emplace_back("push-inline",
                     CodecSeed(0).Add(push, {FloatBytes({0.25f, -1, 2, 0, 3})}).bytes());
  seeds.emplace_back("push-router",
                     CodecSeed(kRouter)
                         .Add(push, {FloatBytes({0.25f, -1, 2, 0, 3})}, {std::string("\0id", 3)})
                         .bytes());
  seeds.emplace_back("push-nan-excluded",
                     CodecSeed(kExclude | kZeroCopy)
                         .Add(push, {FloatBytes({0.25f, -1}), FloatBytes({nan, 0, 3})})
                         .bytes());
  seeds.emplace_back("stop", CodecSeed(0).Add(proto::Stop{"target reached"}).bytes());
  seeds.emplace_back("heartbeat", CodecSeed(0).Add(proto::Heartbeat{1700000000000000}).bytes());
  seeds.emplace_back("error", CodecSeed(0).Add(proto::Error{"rank 3 is taken", true}).bytes());
  seeds.emplace_back("continue", CodecSeed(0).Add(proto::Continue{true, 4, 32}).bytes());
  seeds.emplace_back("syncnow", CodecSeed(0).Add(proto::SyncNow{9}).bytes());
  seeds.emplace_back("chunk", CodecSeed(0).Add(proto::Chunk{0}, {FloatBytes({1, 2})}).bytes());
  {
    proto::Orders orders;
    orders.orders = {{proto::Order::kStage, 1, 4, 32},
                     {proto::Order::kApply, -1, 0, 0.01},
                     {proto::Order::kReply, 1, 0, 5},
                     {proto::Order::kSnapshot, -1, 0, 2}};
    seeds.emplace_back("orders", CodecSeed(0).Add(orders).bytes());
  }
  seeds.emplace_back("slice",
                     CodecSeed(0).Add(proto::Slice{2, 3}, {FloatBytes({1, 2, 3})}).bytes());
  {
    proto::Hello announce{.host = "node-2", .pid = 7, .threads = 1};
    announce.layout = {{"fc0.weight", {2, 2}}, {"fc0.bias", {2}}};
    announce.num_params = 6;
    seeds.emplace_back("hello-layout",
                       CodecSeed(0).Add(announce, {FloatBytes({1, 2, 3, 4, 5, 6})}).bytes());
    seeds.emplace_back("evaluate", CodecSeed(0)
                                       .Add(proto::Evaluate{1, 50, 3}, {FloatBytes({1, 2, 3})})
                                       .Add(proto::Evaluation{1, 0.5, 1.25, 100})
                                       .bytes());
  }
  seeds.emplace_back("push-streamed", CodecSeed(0)
                                          .Add(streamed)
                                          .Add(proto::Chunk{0}, {FloatBytes({1, 2, 3, 4})})
                                          .Add(proto::Heartbeat{5})
                                          .Add(proto::Chunk{1}, {FloatBytes({5, 6, 7, 8})})
                                          .Add(proto::Chunk{2}, {FloatBytes({9, 10})})
                                          .bytes());
  // Heartbeats as commands (codec_fuzz.cc): release [0, 8), exclude [9, 10).
  const int64_t release_0_8 = (int64_t{2} << 32) | (8 << 16) | 0;
  const int64_t exclude_9_10 = (int64_t{1} << 32) | (1 << 16) | 9;
  seeds.emplace_back("push-streamed-release", CodecSeed(kZeroCopy)
                                                  .Add(streamed)
                                                  .Add(proto::Chunk{0}, {FloatBytes({1, 2, 3, 4})})
                                                  .Add(proto::Chunk{1}, {FloatBytes({5, 6, 7, 8})})
                                                  .Add(proto::Heartbeat{release_0_8})
                                                  .Add(proto::Chunk{2}, {FloatBytes({9, 10})})
                                                  .Add(proto::Heartbeat{exclude_9_10})
                                                  .bytes());
  seeds.emplace_back("model-streamed-inf", CodecSeed(kZeroCopy | kExclude)
                                               .Add(streamed_model)
                                               .Add(proto::Chunk{0}, {FloatBytes({1, inf, 3, 4})})
                                               .Add(proto::Chunk{1}, {FloatBytes({5, 6, 7})})
                                               .bytes());
  return seeds;
}

void PutBigEndian32(uint32_t value, std::string* out) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(value >> shift));
}

std::string IdxLabels(const std::vector<uint8_t>& labels) {
  std::string out("\0\0\x08\x01", 4);
  PutBigEndian32(static_cast<uint32_t>(labels.size()), &out);
  out.append(labels.begin(), labels.end());
  return out;
}

std::string IdxImages(uint32_t count, uint32_t rows, uint32_t cols) {
  std::string out("\0\0\x08\x03", 4);
  PutBigEndian32(count, &out);
  PutBigEndian32(rows, &out);
  PutBigEndian32(cols, &out);
  for (uint32_t i = 0; i < count * rows * cols; ++i) out.push_back(static_cast<char>(i * 37 + 11));
  return out;
}

std::string Gzip(std::string_view bytes) {
  z_stream z{};
  if (deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
  std::string out(deflateBound(&z, bytes.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// An IDX input: the shard byte, the labels file's length, then both files.
std::string IdxSeed(uint8_t shard, const std::string& labels, const std::string& images) {
  std::string out(1, static_cast<char>(shard));
  out.push_back(static_cast<char>(labels.size() & 0xFF));
  out.push_back(static_cast<char>(labels.size() >> 8));
  return out + labels + images;
}

std::vector<std::pair<std::string, std::string>> IdxSeeds() {
  const std::string labels = IdxLabels({3, 0, 9, 1, 1});
  const std::string images = IdxImages(5, 4, 3);
  return {
      {"plain", IdxSeed(0x00, labels, images)},
      {"plain-shard-2-of-3", IdxSeed(0x22, labels, images)},
      {"gzip", IdxSeed(0x10, Gzip(labels), Gzip(images))},
      {"gzip-images-only", IdxSeed(0x31, labels, Gzip(images))},
      {"one-image-28x28", IdxSeed(0x00, IdxLabels({7}), IdxImages(1, 28, 28))},
      {"empty", IdxSeed(0x00, IdxLabels({}), IdxImages(0, 2, 2))},
  };
}

std::vector<std::pair<std::string, std::string>> LibsvmSeeds() {
  return {
      {"basic", "1 1:0.5 3:1.25 10:-2\n0 2:1\n2 1:1e-3 4:+7\n"},
      {"minus-one-labels", "-1 1:1 2:2\n+1 3:0.25\n-1\n"},
      {"comments-blank-lines", "# a header comment\n\n3 5:1 # trailing\n  \t\n1 1:2\r\n"},
      {"float-labels", "2.0 1:0 2:-0\n+4 3:3.4028234e38 7:1.17549435e-38\n"},
      {"no-final-newline", "0 1:1 2:2 3:3"},
  };
}

trace::Record Make(int64_t t, std::string node, std::string lane, std::string kind,
                   std::string name, int64_t dur, trace::Args args) {
  return {t,   std::move(node), std::move(lane), std::move(kind), std::move(name),
          dur, std::move(args)};
}

std::vector<std::pair<std::string, std::string>> TraceSeeds() {
  constexpr int64_t kT0 = 1700000000000000;
  const std::vector<trace::Record> records = {
      trace::MetaRecord(kT0, "worker-0"),
      Make(kT0 + 10, "worker-0", "compute", "span", "step", 9000,
           {{"clock", int64_t{0}}, {"samples", int64_t{64}}}),
      Make(kT0 + 9100, "worker-0", "comm", "span", "push", 300, {{"bytes", int64_t{31400}}}),
      Make(kT0 + 9500, "worker-0", "wait", "instant", "reply", 0, {{"note", std::string("ok")}}),
      Make(kT0 + 9600, "worker-0", "counter", "counter", "loss", 0, {{"value", 0.693}}),
  };
  std::string stream;
  for (size_t i = 0; i < records.size(); ++i) {
    msgpack::sbuffer buffer;
    trace::Pack(records[i], &buffer);
    stream.append(buffer.data(), buffer.size());
  }
  msgpack::sbuffer meta;
  trace::Pack(trace::MetaRecord(kT0, "server-0"), &meta);
  return {
      {"worker", stream},
      {"meta-only", std::string(meta.data(), meta.size())},
      {"two-streams", stream + stream},
  };
}

std::vector<std::pair<std::string, std::string>> CheckpointSeeds() {
  const server::Checkpoint bsp{
      .model = "softmax",
      .policy = "bsp",
      .optimizer = "momentum",
      .workers = 4,
      .iteration = 120,
      .version = 120,
      .samples = 30720,
      .seconds = 12.5,
      .params = std::make_shared<std::vector<float>>(
          std::vector<float>{0.5f, -0.25f, 1e-3f, 3.0f, -7.5f, 0.f, 2.f, 1.f}),
      .optimizer_state = {0.1f, 0.f, -0.2f, 0.3f, 0.f, 0.f, 0.01f, -0.01f}};
  server::Checkpoint lbbsp = bsp;
  lbbsp.policy = "lbbsp";
  lbbsp.policy_extra = {70, 60, 66, 60, 16, 5, 115, 0};
  server::Checkpoint sgd = bsp;
  sgd.policy = "ssp:3";
  sgd.optimizer = "sgd";
  sgd.optimizer_state.clear();
  sgd.params = std::make_shared<std::vector<float>>(std::vector<float>{1.f});
  // Counters at their bounds (read), and just past them (refused): the
  // mutator starts next to the limits.
  server::Checkpoint at_bounds = lbbsp;
  at_bounds.iteration = server::kMaxCheckpointCount;
  at_bounds.version = server::kMaxCheckpointCount;
  at_bounds.samples = server::kMaxCheckpointSamples;
  at_bounds.workers = server::kMaxCheckpointWorkers;
  at_bounds.policy_extra = {server::kMaxCheckpointCount, -server::kMaxCheckpointCount};
  server::Checkpoint overflowing = bsp;
  overflowing.iteration = INT64_MAX;
  server::Checkpoint huge_extra = lbbsp;
  huge_extra.policy_extra.back() = INT64_MIN;
  // The input's first byte is the option byte of checkpoint_fuzz.cc: 0
  // reads the file as it is, 1 re-seals its checksum first.
  const std::string good = server::EncodeCheckpoint(bsp);
  return {
      {"bsp-momentum", '\0' + good},
      {"bsp-momentum-resealed", '\1' + good},
      {"lbbsp-split", '\1' + server::EncodeCheckpoint(lbbsp)},
      {"ssp-sgd-one-param", '\0' + server::EncodeCheckpoint(sgd)},
      {"truncated", '\0' + good.substr(0, good.size() / 2)},
      {"counters-at-bounds", '\0' + server::EncodeCheckpoint(at_bounds)},
      {"iteration-int64-max", '\0' + server::EncodeCheckpoint(overflowing)},
      {"extra-int64-min", '\0' + server::EncodeCheckpoint(huge_extra)},
  };
}

// The compress target's input (compress_fuzz.cc): a mode byte (bits 0-2
// the kind, 3-5 top-k's fraction, 6 encode, 7 wide n), n as u24, a float
// scale, then bytes to decode or floats to encode.
std::string CompressInput(uint8_t mode, size_t n, float scale, std::string_view rest) {
  std::string input(1, static_cast<char>(mode));
  for (int b = 0; b < 3; ++b) input.push_back(static_cast<char>((n >> (8 * b)) & 0xFF));
  input.append(reinterpret_cast<const char*>(&scale), sizeof scale);
  input.append(rest);
  return input;
}

std::vector<std::pair<std::string, std::string>> CompressSeeds() {
  using compress::Codec;
  using compress::Kind;
  std::vector<float> gradient(300);
  for (size_t i = 0; i < gradient.size(); ++i) {
    gradient[i] = std::sin(static_cast<float>(i) * 0.7f) * std::pow(10.0f, float(i % 5) - 3);
  }
  auto encoded = [](const Codec& codec, const std::vector<float>& values) {
    std::vector<std::byte> bytes;
    compress::Encode(codec, values, &bytes);
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  };
  // Fraction index 0 is 0.01 and 4 is 1e-4 (compress_fuzz.cc's kFractions).
  const Codec topk{Kind::kTopK, 0.01};
  std::vector<float> wide(2 * compress::kTopKSegment + 100, 0.0f);
  for (size_t i = 0; i < wide.size(); i += 9973) wide[i] = static_cast<float>(i % 17) - 8.5f;
  const Codec sparse{Kind::kTopK, 1e-4};
  const float awkward[] = {0.0f,
                           -0.0f,
                           65504.0f,
                           65520.0f,
                           -1e9f,
                           3.0f * 0x1p-26f,
                           std::numeric_limits<float>::denorm_min(),
                           FLT_MAX,
                           1e-37f,
                           std::numeric_limits<float>::quiet_NaN(),
                           std::numeric_limits<float>::infinity(),
                           1.0f,
                           1.0f,
                           -2.0f};
  const std::string_view awkward_bytes(reinterpret_cast<const char*>(awkward), sizeof awkward);
  const std::string_view gradient_bytes(reinterpret_cast<const char*>(gradient.data()),
                                        4 * gradient.size());
  return {
      {"none", CompressInput(0, 300, 1.0f, encoded(Codec{Kind::kNone}, gradient))},
      {"fp16", CompressInput(1, 300, -0.5f, encoded(Codec{Kind::kFp16}, gradient))},
      {"bf16", CompressInput(2, 300, 0.25f, encoded(Codec{Kind::kBf16}, gradient))},
      {"int8", CompressInput(3, 300, 1.0f, encoded(Codec{Kind::kInt8}, gradient))},
      {"topk", CompressInput(4, 300, 1.0f, encoded(topk, gradient))},
      {"topk-wide", CompressInput(4 | 4 << 3 | 0x80, wide.size(), 1.0f, encoded(sparse, wide))},
      {"encode-int8", CompressInput(3 | 0x40, 0, 1.0f, gradient_bytes)},
      {"encode-fp16-awkward", CompressInput(1 | 0x40, 0, 1.0f, awkward_bytes)},
      {"encode-topk-awkward", CompressInput(4 | 0x40, 0, 1.0f, awkward_bytes)},
  };
}

}  // namespace
}  // namespace dmlps::fuzz

int main(int argc, char** argv) {
  using namespace dmlps::fuzz;
  if (argc != 2) {
    std::fprintf(stderr, "usage: dmlps-fuzz-make-seeds DIR\n");
    return 64;
  }
  const fs::path root = argv[1];
  const std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>>
      targets = {{"codec", CodecSeeds()},           {"idx", IdxSeeds()},
                 {"libsvm", LibsvmSeeds()},         {"trace", TraceSeeds()},
                 {"checkpoint", CheckpointSeeds()}, {"compress", CompressSeeds()}};
  for (const auto& [target, seeds] : targets) {
    std::error_code error;
    fs::create_directories(root / target, error);
    if (error) {
      std::fprintf(stderr, "dmlps-fuzz-make-seeds: error: %s: %s\n", (root / target).c_str(),
                   error.message().c_str());
      return 73;
    }
    for (const auto& [name, bytes] : seeds) {
      if (!Write(root / target / name, bytes)) return 74;
    }
  }
  return 0;
}
