// Compressed pushes and pulls on the server's side: an encoded push opened
// into a dense gradient or refused with the reason, and the per-worker
// replica that pulls send their changes against.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "dmlps/compress/compress.h"
#include "server/intake.h"
#include "server/model_changes.h"

namespace dmlps::server {
namespace {

std::vector<float> Ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * std::sin(0.37F * static_cast<float>(i) + scale);
  return v;
}

// A push of `values` encoded in `codec`, as a worker sends it.
struct EncodedPush {
  proto::Push push;
  std::vector<std::byte> bytes;

  EncodedPush(const compress::Codec& codec, const std::vector<float>& values) {
    compress::Encode(codec, values, &bytes);
    push.num_params = static_cast<int64_t>(values.size());
    push.codec = compress::CodecName(codec);
    push.encoded_bytes = static_cast<int64_t>(bytes.size());
  }
  net::Frames Frames() const {
    net::Frames frames;
    frames.emplace_back(bytes.data(), bytes.size());
    return frames;
  }
};

std::vector<float> Dense(const OpenedPush& opened) {
  std::vector<float> out(static_cast<size_t>(opened.tensor->size()));
  opened.tensor->CopyTo(0, opened.tensor->size(), out);
  return out;
}

TEST_CASE("an encoded push opens as the dense gradient its bytes decode to") {
  const std::vector<float> values = Ramp(1000, 3.0F);
  for (const char* name : {"fp16", "bf16", "int8", "topk:0.05"}) {
    CAPTURE(name);
    const compress::Codec codec = compress::ParseCodec(name).value();
    const EncodedPush sent(codec, values);
    net::Frames payload = sent.Frames();
    const OpenedPush opened = OpenPush(sent.push, 1000, "the model", payload, codec);
    REQUIRE(opened.fault == OpenedPush::kNone);
    std::vector<float> expected(values.size());
    REQUIRE(compress::Decode(codec, sent.bytes, expected).ok());
    CHECK(Dense(opened) == expected);
    CHECK(Dense(opened) != values);  // lossy: what was sent, not what was computed
  }
}

TEST_CASE("an encoded push that does not fit the job is refused with the reason") {
  const std::vector<float> values = Ramp(600, 1.0F);
  const compress::Codec int8 = compress::ParseCodec("int8").value();
  const compress::Codec topk = compress::ParseCodec("topk:0.01").value();
  const EncodedPush good(int8, values);

  SUBCASE("a dense push to a job of encoded pushes") {
    std::vector<float> copy = values;
    net::Frames payload;
    payload.emplace_back(copy.data(), copy.size() * sizeof(float));
    proto::Push dense;
    dense.num_params = 600;
    const OpenedPush opened = OpenPush(dense, 600, "the model", payload, int8);
    CHECK(opened.fault == OpenedPush::kLayout);
    CHECK(opened.why == "push is dense; this job's pushes are encoded in int8");
  }
  SUBCASE("an encoded push to a job of dense pushes") {
    net::Frames payload = good.Frames();
    const OpenedPush opened = OpenPush(good.push, 600, "the model", payload);
    CHECK(opened.fault == OpenedPush::kLayout);
    CHECK(opened.why == "push is encoded; this job's pushes are dense");
  }
  SUBCASE("another codec") {
    net::Frames payload = good.Frames();
    const OpenedPush opened = OpenPush(good.push, 600, "the model", payload, topk);
    CHECK(opened.fault == OpenedPush::kLayout);
    CHECK(opened.why == "push is encoded in 'int8'; this job's pushes are encoded in topk:0.01");
  }
  SUBCASE("a byte short, or a size it does not have") {
    EncodedPush short_push = good;
    short_push.bytes.pop_back();
    net::Frames payload = short_push.Frames();
    OpenedPush opened = OpenPush(short_push.push, 600, "the model", payload, int8);
    CHECK(opened.fault == OpenedPush::kLayout);
    CHECK(opened.why.find("one frame of 612") != std::string::npos);
    proto::Push huge = good.push;
    huge.num_params = int64_t{1} << 40;  // refused before anything is allocated
    payload = good.Frames();
    opened = OpenPush(huge, 600, "the model", payload, int8);
    CHECK(opened.fault == OpenedPush::kSize);
  }
  SUBCASE("top-k offsets out of order") {
    EncodedPush sent(topk, values);  // k = 6 values, then 6 uint16 offsets
    const size_t offsets = sent.bytes.size() - 6 * sizeof(uint16_t);
    std::swap(sent.bytes[offsets], sent.bytes[offsets + 2]);
    std::swap(sent.bytes[offsets + 1], sent.bytes[offsets + 3]);
    net::Frames payload = sent.Frames();
    const OpenedPush opened = OpenPush(sent.push, 600, "the model", payload, topk);
    CHECK(opened.fault == OpenedPush::kLayout);
    CHECK(opened.why.starts_with("topk:0.01: "));
    CHECK(opened.tensor == nullptr);
  }
  SUBCASE("a NaN scale") {
    EncodedPush sent = good;
    const float nan = std::nanf("");
    std::memcpy(sent.bytes.data(), &nan, sizeof(nan));
    net::Frames payload = sent.Frames();
    const OpenedPush opened = OpenPush(sent.push, 600, "the model", payload, int8);
    CHECK(opened.fault == OpenedPush::kLayout);
    CHECK(opened.tensor == nullptr);
  }
}

TEST_CASE("pulls of changes keep the worker's copy and the server's replica equal bit for bit") {
  for (const char* name : {"fp16", "int8", "topk:0.02"}) {
    CAPTURE(name);
    const compress::Codec codec = compress::ParseCodec(name).value();
    Replica replica;
    std::vector<std::byte> bytes;
    std::vector<float> model = Ramp(3000, 2.0F);
    // The first: whole, and the replica is the model.
    CHECK_FALSE(EncodeChange(codec, model, &replica, &bytes));
    CHECK(replica.values == model);
    std::vector<float> worker = model;  // what the worker took
    auto gap = [&] {
      double sum = 0;
      for (size_t i = 0; i < model.size(); ++i) sum += std::abs(model[i] - worker[i]);
      return sum;
    };
    auto pull = [&] {
      REQUIRE(EncodeChange(codec, model, &replica, &bytes));
      CHECK(bytes.size() == compress::EncodedBytes(codec, model.size()));
      REQUIRE(compress::DecodeAdd(codec, bytes, 1.0F, worker).ok());
      REQUIRE(worker == replica.values);
    };
    for (int step = 0; step < 40; ++step) {
      const std::vector<float> change = Ramp(3000, 0.05F + 0.001F * static_cast<float>(step));
      for (size_t i = 0; i < model.size(); ++i) model[i] -= change[i];
      pull();
    }
    const double moving = gap();
    CHECK(moving > 0);
    // What a change dropped goes with the next ones: once the model stops
    // moving, the worker's copy closes in on it, down to float rounding.
    for (int still = 0; still < 60; ++still) pull();
    double magnitude = 0;
    for (const float v : model) magnitude += std::abs(v);
    CHECK(gap() <= 1e-4 * moving + 1e-8 * magnitude);
  }
}

TEST_CASE("a change that does not decode sends the model whole") {
  const compress::Codec int8 = compress::ParseCodec("int8").value();
  Replica replica;
  std::vector<std::byte> bytes;
  std::vector<float> model(300, 1.0F);
  CHECK_FALSE(EncodeChange(int8, model, &replica, &bytes));
  model[7] = std::numeric_limits<float>::infinity();
  CHECK_FALSE(EncodeChange(int8, model, &replica, &bytes));
  CHECK(std::isinf(replica.values[7]));
}

}  // namespace
}  // namespace dmlps::server
