#include "dmlps/compress/compress.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "compress/kernels.h"

namespace dmlps::compress {
namespace {

const Codec kNoneCodec{Kind::kNone};
const Codec kFp16{Kind::kFp16};
const Codec kBf16{Kind::kBf16};
const Codec kInt8{Kind::kInt8};
const Codec kTopK1{Kind::kTopK, 0.01};

std::vector<Codec> AllCodecs() {
  return {kNoneCodec, kFp16, kBf16, kInt8, kTopK1, Codec{Kind::kTopK, 0.3}};
}

// Values of mixed magnitudes and signs, as gradients have.
std::vector<float> Gradient(size_t n, uint64_t seed, float spread = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, spread);
  std::uniform_real_distribution<float> exponent(-6.0f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng) * std::pow(10.0f, exponent(rng));
  return v;
}

// Gradient values with the floats that break naive kernels mixed in: NaN
// (quiet and signalling), infinities, subnormals, signed zeros, the largest
// floats, values at rounding ties of halves and bfloat16, repeats.
std::vector<float> Awkward(size_t n, uint64_t seed) {
  std::vector<float> v = Gradient(n, seed);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            std::bit_cast<float>(0x7F800001u),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::denorm_min(),
                            -1e-40f,
                            0.0f,
                            -0.0f,
                            FLT_MAX,
                            -FLT_MAX,
                            65504.0f,
                            65519.99f,
                            65520.0f,
                            1.0f + 0x1p-11f,
                            1.0f + 0x1p-8f,
                            0x1p-25f,
                            3.0f * 0x1p-26f,
                            1e-37f};
  std::mt19937_64 rng(seed + 1);
  for (size_t i = 0; i < n; ++i) {
    if (rng() % 7 == 0) v[i] = specials[rng() % std::size(specials)];
    if (i > 0 && rng() % 11 == 0) v[i] = v[i - 1];
  }
  return v;
}

bool SameBits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), 4 * a.size()) == 0);
}

bool AllFinite(std::span<const float> v) {
  return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
}

std::vector<std::byte> Encoded(const Codec& codec, std::span<const float> values) {
  std::vector<std::byte> bytes;
  Encode(codec, values, &bytes);
  return bytes;
}

std::vector<float> Decoded(const Codec& codec, std::span<const std::byte> bytes, size_t n) {
  std::vector<float> out(n);
  const Status decoded = Decode(codec, bytes, out);
  REQUIRE_MESSAGE(decoded.ok(), decoded.message());
  return out;
}

float LoadScale(const std::vector<std::byte>& bytes, size_t block) {
  float s;
  std::memcpy(&s, bytes.data() + 4 * block, sizeof s);
  return s;
}

TEST_CASE("codecs parse from their names and print back the same") {
  for (const char* name : {"none", "fp16", "bf16", "int8", "topk:0.01", "topk:1", "topk:0.125",
                           "topk:1e-05", "topk:0.3333"}) {
    CAPTURE(name);
    Result<Codec> codec = ParseCodec(name);
    REQUIRE(codec.ok());
    CHECK(CodecName(*codec) == name);
    CHECK(ValidateCodec(*codec).ok());
  }
  CHECK(ParseCodec("topk:0.01")->fraction == 0.01);
  CHECK(ParseCodec("int8")->kind == Kind::kInt8);
  // A fraction written any other way prints in its shortest form.
  CHECK(CodecName(*ParseCodec("topk:0.010")) == "topk:0.01");
  for (const char* bad : {"", "FP16", "int4", "topk", "topk:", "topk:0", "topk:-0.1", "topk:1.5",
                          "topk:nan", "topk:inf", "topk:0.01x", " fp16", "topk:0x1p-3"}) {
    CAPTURE(bad);
    Result<Codec> codec = ParseCodec(bad);
    REQUIRE(!codec.ok());
    CHECK(codec.status().code() == StatusCode::kInvalidArgument);
    CHECK(codec.status().message().find('\n') == std::string::npos);
    CHECK(codec.status().message().find("topk:F") != std::string::npos);
  }
  CHECK(!ValidateCodec(Codec{Kind::kTopK, 0}).ok());
  CHECK(!ValidateCodec(Codec{Kind::kTopK, 2}).ok());
  CHECK(!ValidateCodec(Codec{Kind::kFp16, 0.5}).ok());
  CHECK(!ValidateCodec(Codec{static_cast<Kind>(9)}).ok());
}

TEST_CASE("EncodedBytes is the exact size of what Encode writes") {
  CHECK(EncodedBytes(kFp16, 1000) == 2000);
  CHECK(EncodedBytes(kInt8, 256) == 4 + 256);
  CHECK(EncodedBytes(kInt8, 257) == 8 + 257);
  CHECK(TopKCount(0.01, 1000) == 10);
  CHECK(TopKCount(0.01, 1001) == 11);
  CHECK(TopKCount(0.01, 5) == 1);
  CHECK(TopKCount(1, 5) == 5);
  CHECK(TopKCount(0.01, 0) == 0);
  CHECK(EncodedBytes(kTopK1, 1000) == 4 + 6 * 10);
  CHECK(EncodedBytes(kTopK1, 65537) == 8 + 6 * 656);
  for (const Codec& codec : AllCodecs()) {
    for (size_t n : {0, 1, 7, 8, 255, 256, 257, 1000, 65536, 65537, 200000}) {
      CAPTURE(CodecName(codec));
      CAPTURE(n);
      CHECK(Encoded(codec, Gradient(n, n)).size() == EncodedBytes(codec, n));
    }
  }
  // The compression ratios the benchmark reports, at a 4 MiB model.
  const size_t n = size_t{1} << 20;
  auto ratio = [&](const Codec& c) { return 4.0 * n / static_cast<double>(EncodedBytes(c, n)); };
  CHECK(ratio(kFp16) == 2.0);
  CHECK(ratio(kInt8) > 3.93);
  CHECK(ratio(kTopK1) > 66.0);
}

TEST_CASE("fp16 and bf16 round to nearest within half a unit and saturate") {
  std::vector<float> v = Gradient(100000, 7, 1.0f);
  for (float& x : v) x = std::clamp(x * 100.0f, -65504.0f, 65504.0f);
  const std::vector<float> half = Decoded(kFp16, Encoded(kFp16, v), v.size());
  const std::vector<float> brain = Decoded(kBf16, Encoded(kBf16, v), v.size());
  double worst_half = 0, worst_brain = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const double x = v[i];
    worst_half = std::max(worst_half, std::abs(half[i] - x) / std::max(std::abs(x), 0x1p-14));
    worst_brain = std::max(worst_brain, std::abs(brain[i] - x) / std::abs(x));
  }
  CHECK(worst_half <= 0x1p-11);  // 2^-25 absolute below the normal halves, 2^-14
  CHECK(worst_brain <= 0x1p-8);
  CHECK(worst_half > 0x1p-13);  // the test does exercise rounding

  const std::vector<float> big = {65519.0f, 65520.0f, 1e9f, -7e4f, FLT_MAX, -FLT_MAX, 0x1p-26f};
  const std::vector<float> h = Decoded(kFp16, Encoded(kFp16, big), big.size());
  CHECK(h == std::vector<float>{65504.0f, 65504.0f, 65504.0f, -65504.0f, 65504.0f, -65504.0f, 0});
  const std::vector<float> b = Decoded(kBf16, Encoded(kBf16, big), big.size());
  const float bf16_max = std::bit_cast<float>(0x7F7F0000u);
  CHECK(b[4] == bf16_max);
  CHECK(b[5] == -bf16_max);
  CHECK(AllFinite(b));
}

// Every half's midpoint to the next half rounds to the even one of the two,
// and a float either side of it to the nearer; bfloat16 alike. Checked on
// both kernel sets against this oracle, written from the rule itself.
TEST_CASE("halves and bfloat16 round ties to even on both kernel sets") {
  std::vector<const Kernels*> sets = {&ScalarKernels()};
  if (Avx2Kernels() != nullptr) sets.push_back(Avx2Kernels());
  for (const Kernels* k : sets) {
    CAPTURE(k->name);
    for (const bool brain : {false, true}) {
      std::vector<float> in;
      std::vector<uint16_t> want;
      const uint32_t last = brain ? 0x7F7F : 0x7BFF;  // below the largest finite one
      for (uint32_t h = 0; h < last; ++h) {
        float lo = 0, hi = 0;
        const std::byte* p = reinterpret_cast<const std::byte*>(&h);
        const uint32_t next = h + 1;
        (brain ? k->bf16_decode : k->fp16_decode)(p, 1, &lo);
        (brain ? k->bf16_decode : k->fp16_decode)(reinterpret_cast<const std::byte*>(&next), 1,
                                                  &hi);
        const float mid = static_cast<float>((static_cast<double>(lo) + hi) / 2);
        for (const float sign : {1.0f, -1.0f}) {
          const uint16_t s = sign < 0 ? 0x8000 : 0;
          in.insert(in.end(), {sign * mid, sign * std::nextafter(mid, 0.0f),
                               sign * std::nextafter(mid, FLT_MAX), sign * lo});
          const auto even = static_cast<uint16_t>((h % 2 == 0 ? h : next) | s);
          want.insert(want.end(), {even, static_cast<uint16_t>(h | s),
                                   static_cast<uint16_t>(next | s), static_cast<uint16_t>(h | s)});
        }
      }
      std::vector<uint16_t> got(in.size());
      (brain ? k->bf16_encode : k->fp16_encode)(in.data(), in.size(),
                                                reinterpret_cast<std::byte*>(got.data()));
      size_t wrong = 0;
      for (size_t i = 0; i < in.size(); ++i) wrong += got[i] != want[i];
      CAPTURE(brain);
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE("int8 is within half a block's scale; zero blocks are exact") {
  std::vector<float> v = Gradient(10 * kInt8Block + 37, 11);
  // A block of zeros, and one of values too small for a normal scale.
  std::fill(v.begin() + 2 * kInt8Block, v.begin() + 3 * kInt8Block, 0.0f);
  std::fill(v.begin() + 4 * kInt8Block, v.begin() + 5 * kInt8Block, 1e-37f);
  const std::vector<std::byte> bytes = Encoded(kInt8, v);
  const std::vector<float> d = Decoded(kInt8, bytes, v.size());
  size_t over = 0;
  for (size_t b = 0; b * kInt8Block < v.size(); ++b) {
    const float scale = LoadScale(bytes, b);
    const auto first = v.begin() + static_cast<std::ptrdiff_t>(b * kInt8Block);
    const auto last =
        v.begin() + static_cast<std::ptrdiff_t>(std::min(v.size(), (b + 1) * kInt8Block));
    const float max = std::abs(
        *std::max_element(first, last, [](float x, float y) { return std::abs(x) < std::abs(y); }));
    CAPTURE(b);
    if (b == 2 || b == 4) {
      CHECK(scale == 0.0f);
    } else {
      CHECK(scale == max / 127.0f);
    }
    for (size_t i = b * kInt8Block; i < std::min(v.size(), (b + 1) * kInt8Block); ++i) {
      if (b == 4) {
        over += d[i] != 0.0f;
      } else {
        over += std::abs(d[i] - v[i]) > scale * (0.5f + 1e-4f);
      }
    }
  }
  CHECK(over == 0);
  for (size_t i = 2 * kInt8Block; i < 3 * kInt8Block; ++i) REQUIRE(d[i] == 0.0f);
}

// The k values of largest magnitude kept, the others 0; among equal
// magnitudes the lower index first.
std::vector<float> LargestOf(const std::vector<float>& v, size_t k) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return std::abs(v[a]) > std::abs(v[b]); });
  std::vector<float> kept(v.size(), 0.0f);
  for (size_t j = 0; j < k; ++j) kept[order[j]] = v[order[j]];
  return kept;
}

TEST_CASE("top-k sends the k largest magnitudes exactly, ties to the lower index") {
  const std::vector<float> v = Gradient(3000, 5);
  const Codec codec{Kind::kTopK, 0.01};
  CHECK(SameBits(Decoded(codec, Encoded(codec, v), v.size()), LargestOf(v, 30)));
  const std::vector<float> large = Gradient(5 * kTopKSegment, 6);
  CHECK(SameBits(Decoded(codec, Encoded(codec, large), large.size()),
                 LargestOf(large, TopKCount(0.01, large.size()))));

  const std::vector<float> ties = {1, -2, 2, 1, -2, 0.5f, 2, 1};
  const Codec three{Kind::kTopK, 3.0 / 8};
  CHECK(Decoded(three, Encoded(three, ties), 8) == std::vector<float>{0, -2, 2, 0, -2, 0, 0, 0});
  const std::vector<float> zeros(10, 0.0f);
  CHECK(Decoded(kTopK1, Encoded(kTopK1, zeros), 10) == zeros);
  // Across segments: the largest of each of three segments.
  std::vector<float> wide(2 * kTopKSegment + 10, 0.0f);
  wide[5] = 1;
  wide[kTopKSegment + 7] = -3;
  wide[2 * kTopKSegment + 9] = 2;
  const Codec few{Kind::kTopK, 3.0 / static_cast<double>(wide.size())};
  CHECK(SameBits(Decoded(few, Encoded(few, wide), wide.size()), wide));
}

// A large vector's threshold is first bounded from a sample of every 64th
// value (formats.cc); where the sample misleads, the result is the same.
TEST_CASE("top-k stays exact where its sample misleads") {
  const size_t n = kTopKSegment + 5000;
  const Codec codec{Kind::kTopK, 0.01};
  const size_t k = TopKCount(0.01, n);
  // The sampled values are the largest: the bound keeps fewer than k.
  std::vector<float> v = Gradient(n, 77);
  for (size_t i = 0; i < n; i += 64) v[i] = 1000.0f + static_cast<float>(i);
  CHECK(SameBits(Decoded(codec, Encoded(codec, v), n), LargestOf(v, k)));
  // All equal: the bound keeps every value, far more than k.
  const std::vector<float> same(n, -0.5f);
  std::vector<float> first(n, 0.0f);
  std::fill(first.begin(), first.begin() + static_cast<std::ptrdiff_t>(k), -0.5f);
  CHECK(SameBits(Decoded(codec, Encoded(codec, same), n), first));
}

TEST_CASE("a NaN or infinity is never sent as a number: Decode refuses it") {
  for (const Codec& codec : AllCodecs()) {
    for (const float bad :
         {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
          -std::numeric_limits<float>::infinity()}) {
      std::vector<float> v = Gradient(1000, 3);
      v[617] = bad;
      std::vector<float> out(v.size(), 42.0f);
      CAPTURE(CodecName(codec));
      CAPTURE(bad);
      const Status decoded = Decode(codec, Encoded(codec, v), out);
      CHECK(decoded.code() == StatusCode::kInvalidArgument);
      CHECK(decoded.message().find(CodecName(codec) + ": ") == 0);
      CHECK(out == std::vector<float>(v.size(), 42.0f));
    }
  }
}

// `bytes` changed by `spoil` must be refused by Decode and DecodeAdd, with a
// one-line message holding `why`, and `out` untouched.
void CheckRefused(const Codec& codec, std::vector<std::byte> bytes, size_t n,
                  const std::function<void(std::vector<std::byte>&)>& spoil,
                  const std::string& why) {
  spoil(bytes);
  std::vector<float> out(n, -3.5f);
  const Status decoded = Decode(codec, bytes, out);
  CAPTURE(decoded.message());
  CAPTURE(why);
  CHECK(decoded.code() == StatusCode::kInvalidArgument);
  CHECK(decoded.message().find(why) != std::string::npos);
  CHECK(decoded.message().find('\n') == std::string::npos);
  CHECK(!DecodeAdd(codec, bytes, 1.0f, out).ok());
  CHECK(out == std::vector<float>(n, -3.5f));
}

template <typename T>
void Put(std::vector<std::byte>& bytes, size_t at, T value) {
  std::memcpy(bytes.data() + at, &value, sizeof value);
}

TEST_CASE("hostile bytes are refused in one line and nothing is written") {
  const size_t n = kTopKSegment + 1000;  // two segments, 261 int8 blocks
  const std::vector<float> v = Gradient(n, 9);
  for (const Codec& codec : AllCodecs()) {
    CAPTURE(CodecName(codec));
    const std::vector<std::byte> good = Encoded(codec, v);
    CheckRefused(
        codec, good, n, [](auto& b) { b.pop_back(); }, "bytes, not");
    CheckRefused(
        codec, good, n, [](auto& b) { b.push_back(std::byte{0}); }, "bytes, not");
    // A top-k message's size depends on n only through k and the segments.
    if (codec.kind != Kind::kTopK)
      CheckRefused(
          codec, good, n - 1, [](auto&) {}, "bytes, not");
  }
  CheckRefused(
      kFp16, Encoded(kFp16, v), n, [](auto& b) { Put<uint16_t>(b, 2 * 99, 0x7C00); },
      "value 99 is not finite");
  CheckRefused(
      kBf16, Encoded(kBf16, v), n, [](auto& b) { Put<uint16_t>(b, 2 * 5, 0xFFC1); },
      "value 5 is not finite");
  CheckRefused(
      kNoneCodec, Encoded(kNoneCodec, v), n, [](auto& b) { Put(b, 4 * 3, FLT_MAX * 2); },
      "value 3 is not finite");
  const std::vector<std::byte> int8 = Encoded(kInt8, v);
  for (const float scale : {std::numeric_limits<float>::quiet_NaN(), -1.0f, FLT_MAX,
                            std::numeric_limits<float>::infinity(), kInt8MaxScale * 1.01f}) {
    CheckRefused(
        kInt8, int8, n, [&](auto& b) { Put(b, 4 * 7, scale); }, "block 7 has scale");
  }
  const std::vector<std::byte> topk = Encoded(kTopK1, v);
  const size_t k = TopKCount(0.01, n);
  REQUIRE(k == 666);
  uint32_t first = 0;
  std::memcpy(&first, topk.data(), 4);
  REQUIRE(first < k);  // the second segment holds some too
  const size_t offsets = 8 + 4 * k;
  CheckRefused(
      kTopK1, topk, n, [](auto& b) { Put<uint32_t>(b, 4, 1001); }, "more than its 1000");
  CheckRefused(
      kTopK1, topk, n, [](auto& b) { Put<uint32_t>(b, 0, 0xFFFFFFFF); }, "more than its");
  CheckRefused(
      kTopK1, topk, n, [&](auto& b) { Put<uint32_t>(b, 4, k - first - 1); },
      "count 665 values, not the 666 sent");
  CheckRefused(
      kTopK1, topk, n, [&](auto& b) { Put<uint32_t>(b, 4, k - first + 1); },
      "more than the 666 values");
  CheckRefused(
      kTopK1, topk, n, [&](auto& b) { Put<uint16_t>(b, offsets + 2 * (k - 1), 1000); },
      "beyond its 1000 coordinates");
  CheckRefused(
      kTopK1, topk, n, [&](auto& b) { Put<uint16_t>(b, offsets + 2, 0); },
      "do not ascend at value 1");
  CheckRefused(
      kTopK1, topk, n, [&](auto& b) { std::memcpy(&b[offsets + 2], &b[offsets], 2); },
      "do not ascend");
  CheckRefused(
      kTopK1, topk, n, [&](auto& b) { Put(b, 8 + 4 * 3, std::numeric_limits<float>::quiet_NaN()); },
      "value 3 is not finite");
  std::vector<float> out(n);
  CHECK(!Decode(Codec{Kind::kTopK, 1.5}, topk, out).ok());
}

TEST_CASE("random bytes of the right size decode to finite values or are refused") {
  std::mt19937_64 rng(21);
  size_t accepted = 0;
  for (int round = 0; round < 400; ++round) {
    const Codec codec = AllCodecs()[static_cast<size_t>(round) % AllCodecs().size()];
    const size_t n = 1 + rng() % 3000;
    std::vector<std::byte> bytes(EncodedBytes(codec, n));
    for (std::byte& b : bytes) b = static_cast<std::byte>(rng() % (round % 3 == 0 ? 4 : 256));
    std::vector<float> out(n, 1.0f);
    const Status decoded = Decode(codec, bytes, out);
    if (decoded.ok()) {
      ++accepted;
      CHECK(AllFinite(out));
    } else {
      CHECK(out == std::vector<float>(n, 1.0f));
    }
  }
  CHECK(accepted > 0);
}

TEST_CASE("the AVX2 kernels give the scalar kernels' bytes and floats") {
  const Kernels* avx2 = Avx2Kernels();
  if (avx2 == nullptr) {
    MESSAGE("this CPU lacks AVX2, F16C or FMA: only the scalar kernels run here");
    return;
  }
  const Kernels& scalar = ScalarKernels();
  CHECK(&BestKernels() == avx2);
  for (const Codec& codec : AllCodecs()) {
    for (size_t n : {0, 1, 7, 15, 16, 17, 31, 255, 256, 257, 513, 4099, 70001}) {
      CAPTURE(CodecName(codec));
      CAPTURE(n);
      const std::vector<float> v = Awkward(n, n * 31 + 1);
      std::vector<std::byte> a, b;
      EncodeWith(scalar, codec, v, &a);
      EncodeWith(*avx2, codec, v, &b);
      REQUIRE(a == b);
      // Finite values decode, on both sets alike; so do their sums.
      std::vector<float> finite = v;
      for (float& x : finite) x = std::isfinite(x) ? x : 1.5f;
      EncodeWith(scalar, codec, finite, &a);
      std::vector<float> da(n), db(n);
      REQUIRE(DecodeWith(scalar, codec, a, da).ok());
      REQUIRE(DecodeWith(*avx2, codec, a, db).ok());
      CHECK(SameBits(da, db));
      std::vector<float> sa = Gradient(n, n), sb = sa;
      REQUIRE(DecodeAddWith(scalar, codec, a, -0.37f, sa).ok());
      REQUIRE(DecodeAddWith(*avx2, codec, a, -0.37f, sb).ok());
      CHECK(SameBits(sa, sb));
      // And refuse alike.
      EncodeWith(scalar, codec, v, &a);
      CHECK(DecodeWith(scalar, codec, a, da).message() ==
            DecodeWith(*avx2, codec, a, db).message());
    }
  }
}

TEST_CASE("DecodeAdd is Decode followed by one fused multiply-add") {
  for (const Codec& codec : AllCodecs()) {
    for (const float scale : {1.0f, -1.0f, 0.25f, 1.0f / 3}) {
      CAPTURE(CodecName(codec));
      const size_t n = 5000;
      const std::vector<std::byte> bytes = Encoded(codec, Gradient(n, 1));
      const std::vector<float> decoded = Decoded(codec, bytes, n);
      std::vector<float> sum = Gradient(n, 2);
      std::vector<float> want = sum;
      for (size_t i = 0; i < n; ++i) want[i] = std::fma(scale, decoded[i], want[i]);
      REQUIRE(DecodeAdd(codec, bytes, scale, sum).ok());
      CHECK(SameBits(sum, want));
    }
  }
}

TEST_CASE("error feedback: what was sent plus the residual is what was given") {
  const size_t n = 3 * kInt8Block + 100;
  for (const Codec& codec : AllCodecs()) {
    CAPTURE(CodecName(codec));
    ErrorFeedback feedback;
    std::vector<double> given(n, 0.0), sent(n, 0.0), magnitude(n, 0.0);
    std::vector<std::byte> bytes;
    for (int step = 0; step < 200; ++step) {
      const std::vector<float> v = Gradient(n, 100 + static_cast<uint64_t>(step));
      REQUIRE(feedback.Encode(codec, v, &bytes).ok());
      const std::vector<float> d = Decoded(codec, bytes, n);
      for (size_t i = 0; i < n; ++i) {
        given[i] += v[i];
        sent[i] += d[i];
        magnitude[i] += std::abs(v[i]);
      }
    }
    REQUIRE(feedback.residual().size() == n);
    double worst = 0;
    for (size_t i = 0; i < n; ++i) {
      const double gap = std::abs(sent[i] + feedback.residual()[i] - given[i]);
      worst = std::max(worst, gap / (magnitude[i] + 1e-30));
    }
    CHECK(worst < 1e-6);
    if (codec.kind == Kind::kNone)
      CHECK(std::all_of(feedback.residual().begin(), feedback.residual().end(),
                        [](float r) { return r == 0; }));
  }
}

TEST_CASE("error feedback under top-k sends every coordinate that keeps its sign") {
  // Coordinate i gets sign_i * m_i * (1 + noise) each step, m_i from 0.1 to
  // 1.1 and noise below 1/2: at most M = 1.65, at least m = 0.05. A
  // coordinate unsent for t steps holds at least m t; one sent s steps ago
  // at most M s; so within 2 n (M / m + 1) / k steps every one is sent
  // (docs/compression.md, "Error feedback").
  const size_t n = 2000;
  const Codec codec{Kind::kTopK, 0.01};
  const size_t k = TopKCount(codec.fraction, n);
  std::mt19937_64 rng(4);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<float> base(n);
  for (float& b : base) b = (rng() % 2 == 0 ? 1.0f : -1.0f) * (0.1f + unit(rng));
  ErrorFeedback feedback;
  std::vector<bool> seen(n, false);
  std::vector<std::byte> bytes;
  const size_t bound = 2 * n * (33 + 1) / k;
  size_t unseen = n;
  size_t steps = 0;
  std::vector<float> v(n);
  for (; steps < bound && unseen > 0; ++steps) {
    for (size_t i = 0; i < n; ++i) v[i] = base[i] * (1.0f + (unit(rng) - 0.5f));
    REQUIRE(feedback.Encode(codec, v, &bytes).ok());
    const std::vector<float> d = Decoded(codec, bytes, n);
    for (size_t i = 0; i < n; ++i) {
      if (d[i] != 0 && !seen[i]) {
        seen[i] = true;
        --unseen;
        CHECK(feedback.residual()[i] == 0.0f);  // a sent coordinate keeps nothing back
      }
    }
  }
  CHECK(unseen == 0);
  MESSAGE("every coordinate sent within " << steps << " steps (bound " << bound << ")");
}

TEST_CASE("error feedback refuses what it cannot send, and changes nothing") {
  ErrorFeedback feedback;
  std::vector<std::byte> bytes = {std::byte{7}};
  std::vector<float> v = Gradient(300, 1);
  v[10] = std::numeric_limits<float>::infinity();
  const Status refused = feedback.Encode(kInt8, v, &bytes);
  CHECK(refused.code() == StatusCode::kInvalidArgument);
  CHECK(refused.message().find("value 10") != std::string::npos);
  CHECK(bytes == std::vector<std::byte>{std::byte{7}});
  CHECK(feedback.residual().empty());
  // One coordinate of four sent: the other large one stays behind, and
  // another like it would overflow the sum.
  const Codec one{Kind::kTopK, 0.25};
  REQUIRE(
      feedback.Encode(one, std::vector<float>{FLT_MAX * 0.75f, FLT_MAX * 0.8f, 1, 2}, &bytes).ok());
  const std::vector<float> before(feedback.residual().begin(), feedback.residual().end());
  CHECK(before == std::vector<float>{FLT_MAX * 0.75f, 0, 1, 2});
  const std::vector<std::byte> sent = bytes;
  const Status overflow =
      feedback.Encode(one, std::vector<float>{FLT_MAX * 0.75f, 0, 0, 0}, &bytes);
  CHECK(overflow.message().find("value 0 (") == 0);
  CHECK(SameBits(feedback.residual(), before));
  CHECK(bytes == sent);
  CHECK(feedback.Encode(one, Gradient(3, 1), &bytes).message() ==
        "3 values sent where the residual holds 4");
  feedback.Reset();
  CHECK(feedback.residual().empty());
  CHECK(feedback.Encode(kTopK1, Gradient(3, 1), &bytes).ok());
}

// A pull of the model's change since the worker's last pull: the server
// keeps what the worker holds; both apply the same DecodeAdd, so they agree
// bit for bit, and what the worker lacks is one encoding's error, never more.
TEST_CASE("a pull of the change since the last one keeps the worker's copy exact") {
  const size_t n = 2 * kInt8Block + 9;
  std::vector<float> model = Gradient(n, 50);
  std::vector<float> held(n, 0.0f);    // the server's copy of the worker's
  std::vector<float> worker(n, 0.0f);  // the worker's parameters
  std::vector<float> change(n);
  std::vector<std::byte> bytes;
  for (int pull = 0; pull < 50; ++pull) {
    const std::vector<float> step = Gradient(n, 60 + static_cast<uint64_t>(pull), 0.01f);
    for (size_t i = 0; i < n; ++i) model[i] -= step[i];
    for (size_t i = 0; i < n; ++i) change[i] = model[i] - held[i];
    Encode(kInt8, change, &bytes);
    REQUIRE(DecodeAdd(kInt8, bytes, 1.0f, held).ok());
    REQUIRE(DecodeAdd(kInt8, bytes, 1.0f, worker).ok());
    REQUIRE(SameBits(held, worker));
    for (size_t b = 0; b * kInt8Block < n; ++b) {
      for (size_t i = b * kInt8Block; i < std::min(n, (b + 1) * kInt8Block); ++i) {
        const float bound = LoadScale(bytes, b) * 0.51f + 0x1p-22f * std::abs(model[i]);
        REQUIRE(std::abs(model[i] - worker[i]) <= bound);
      }
    }
  }
}

}  // namespace
}  // namespace dmlps::compress
