// libFuzzer target for the compression codecs (dmlps/compress/compress.h):
// Decode and DecodeAdd on bytes from a peer, and Encode on any floats, on
// every kernel set this CPU runs.
//
// Input: [mode and codec: u8][n: u24 little-endian][scale: f32, for
// DecodeAdd; 0.5 when not finite][the rest].
// Mode byte: bits 0-2 the kind (mod 5), bits 3-5 top-k's fraction (of
// kFractions), bit 6 set: the rest is floats to encode, clear: the rest is
// bytes to decode as n floats; bit 7 set: n mod kMaxFloats (top-k over
// three segments), clear: n mod 4097, which runs faster.
//
// Contracts checked, against oracles written here from the header's and
// docs/compression.md's words, not from the implementation:
//   - Decode accepts exactly the bytes of the right size whose every value
//     (and int8 scale) is finite, and whose top-k segments count k values in
//     all, each segment's offsets ascending within it; it then writes what
//     the format says, bit for bit; refused, it writes nothing and says why in
//     one line starting with the codec's name;
//   - DecodeAdd accepts what Decode accepts and gives fma(scale, decoded, out);
//   - Encode writes EncodedBytes, the same bytes on every kernel set; they
//     decode exactly when every value is finite, within each codec's bound;
//   - after ErrorFeedback::Encode the residual is values minus decoded.
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "compress/kernels.h"
#include "dmlps/compress/compress.h"
#include "fuzz_util.h"

namespace dmlps::fuzz {
namespace {

using compress::Codec;
using compress::Kind;

constexpr double kFractions[] = {0.01, 0.1, 0.5, 1.0, 1e-4, 0.3, 2.0 / 3, 0.05};
constexpr size_t kMaxFloats = 2 * compress::kTopKSegment + 300;

template <typename T>
T Load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// A half's value, from IEEE 754's definition.
std::optional<float> HalfValue(uint16_t h) {
  const int exponent = (h >> 10) & 0x1F;
  const int mantissa = h & 0x3FF;
  if (exponent == 0x1F) return std::nullopt;
  const double magnitude =
      exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
  return static_cast<float>((h & 0x8000) != 0 ? -magnitude : magnitude);
}

std::optional<float> FiniteFloat(float f) {
  if (!std::isfinite(f)) return std::nullopt;
  return f;
}

// What `bytes` decode to as n floats, or nullopt when Decode must refuse them.
std::optional<std::vector<float>> Oracle(const Codec& c, const std::vector<std::byte>& bytes,
                                         size_t n) {
  if (bytes.size() != compress::EncodedBytes(c, n)) return std::nullopt;
  std::vector<float> out(n, 0.0f);
  const std::byte* p = bytes.data();
  for (size_t i = 0; i < n && c.kind != Kind::kTopK; ++i) {
    std::optional<float> v;
    if (c.kind == Kind::kNone) v = FiniteFloat(Load<float>(p + 4 * i));
    if (c.kind == Kind::kFp16) v = HalfValue(Load<uint16_t>(p + 2 * i));
    if (c.kind == Kind::kBf16)
      v = FiniteFloat(std::bit_cast<float>(uint32_t{Load<uint16_t>(p + 2 * i)} << 16));
    if (c.kind == Kind::kInt8) {
      const float scale = Load<float>(p + 4 * (i / compress::kInt8Block));
      const size_t blocks = (n + compress::kInt8Block - 1) / compress::kInt8Block;
      if (!(scale >= 0 && scale <= compress::kInt8MaxScale)) return std::nullopt;
      v = static_cast<float>(Load<int8_t>(p + 4 * blocks + i)) * scale;
    }
    if (!v) return std::nullopt;
    out[i] = *v;
  }
  if (c.kind == Kind::kInt8) {  // every block's scale, those of no value too
    for (size_t b = 0; b * compress::kInt8Block < n; ++b) {
      const float scale = Load<float>(p + 4 * b);
      if (!(scale >= 0 && scale <= compress::kInt8MaxScale)) return std::nullopt;
    }
  }
  if (c.kind == Kind::kTopK) {
    const size_t k = compress::TopKCount(c.fraction, n);
    const size_t segments = (n + compress::kTopKSegment - 1) / compress::kTopKSegment;
    size_t j = 0;
    for (size_t s = 0; s < segments; ++s) {
      const size_t length = std::min(compress::kTopKSegment, n - s * compress::kTopKSegment);
      const size_t count = Load<uint32_t>(p + 4 * s);
      if (count > length || count > k - j) return std::nullopt;
      for (size_t e = j + count, previous = SIZE_MAX; j < e; ++j) {
        const size_t offset = Load<uint16_t>(p + 4 * segments + 4 * k + 2 * j);
        if (offset >= length || (previous != SIZE_MAX && offset <= previous)) return std::nullopt;
        previous = offset;
        const std::optional<float> v = FiniteFloat(Load<float>(p + 4 * segments + 4 * j));
        if (!v) return std::nullopt;
        out[s * compress::kTopKSegment + offset] = *v;
      }
    }
    if (j != k) return std::nullopt;
  }
  return out;
}

bool Same(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), 4 * a.size()) == 0);
}

std::vector<const compress::Kernels*> KernelSets() {
  std::vector<const compress::Kernels*> sets = {&compress::ScalarKernels()};
  if (compress::Avx2Kernels() != nullptr) sets.push_back(compress::Avx2Kernels());
  return sets;
}

void FuzzDecode(const Codec& codec, const std::vector<std::byte>& bytes, size_t n, float scale) {
  const std::optional<std::vector<float>> want = Oracle(codec, bytes, n);
  std::vector<float> base(n);
  for (size_t i = 0; i < n; ++i) base[i] = static_cast<float>(i % 7) - 3.25f;
  for (const compress::Kernels* k : KernelSets()) {
    std::vector<float> out(n, 12345.5f);
    const Status decoded = compress::DecodeWith(*k, codec, bytes, out);
    FUZZ_CHECK(decoded.ok() == want.has_value());
    std::vector<float> sum = base;
    const Status added = compress::DecodeAddWith(*k, codec, bytes, scale, sum);
    FUZZ_CHECK(added.ok() == decoded.ok());
    if (!decoded.ok()) {
      FUZZ_CHECK(decoded.code() == StatusCode::kInvalidArgument);
      FUZZ_CHECK(decoded.message().rfind(compress::CodecName(codec) + ": ", 0) == 0);
      FUZZ_CHECK(decoded.message().find('\n') == std::string::npos);
      FUZZ_CHECK(Same(out, std::vector<float>(n, 12345.5f)));
      FUZZ_CHECK(Same(sum, base));
      continue;
    }
    FUZZ_CHECK(Same(out, *want));
    for (size_t i = 0; i < n; ++i) base[i] = std::fma(scale, (*want)[i], base[i]);
    FUZZ_CHECK(Same(sum, base));
    for (size_t i = 0; i < n; ++i) base[i] = static_cast<float>(i % 7) - 3.25f;
  }
}

// Decoded within the codec's bound of the value it came from (all finite).
void CheckBound(const Codec& codec, const std::vector<float>& v, const std::vector<float>& d,
                const std::vector<std::byte>& bytes) {
  const float bf16_max = std::bit_cast<float>(0x7F7F0000u);
  size_t selected = 0;
  float least_selected = INFINITY;
  for (size_t i = 0; i < v.size(); ++i) {
    const double x = v[i], y = d[i], error = std::abs(x - y);
    switch (codec.kind) {
      case Kind::kNone:
        FUZZ_CHECK(std::memcmp(&v[i], &d[i], 4) == 0);
        break;
      case Kind::kFp16:
        if (std::abs(x) <= 65504) FUZZ_CHECK(error <= std::max(std::abs(x) * 0x1p-11, 0x1p-25));
        if (std::abs(x) > 65504) FUZZ_CHECK(y == std::copysign(65504.0, x));
        break;
      case Kind::kBf16:
        if (std::abs(y) < bf16_max) FUZZ_CHECK(error <= std::max(std::abs(x) * 0x1p-8, 0x1p-133));
        if (std::abs(y) == bf16_max) FUZZ_CHECK(std::abs(x) >= bf16_max * (1 - 0x1p-8));
        break;
      case Kind::kInt8: {
        const float scale = Load<float>(bytes.data() + 4 * (i / compress::kInt8Block));
        // Blocks below 127 FLT_MIN go as zeros; the largest saturate.
        if (scale == 0) FUZZ_CHECK(y == 0 && std::abs(x) < 127 * FLT_MIN);
        if (scale > 0 && scale < compress::kInt8MaxScale) FUZZ_CHECK(error <= scale * (0.5 + 1e-4));
        break;
      }
      case Kind::kTopK:
        FUZZ_CHECK(y == 0 || y == x);
        if (y != 0) {
          ++selected;
          least_selected = std::min(least_selected, std::abs(v[i]));
        }
        break;
    }
  }
  if (codec.kind != Kind::kTopK) return;
  FUZZ_CHECK(selected <= compress::TopKCount(codec.fraction, v.size()));
  for (size_t i = 0; i < v.size(); ++i) {
    if (d[i] == 0 && selected == compress::TopKCount(codec.fraction, v.size())) {
      FUZZ_CHECK(std::abs(v[i]) <= least_selected);
    }
  }
}

void FuzzEncode(const Codec& codec, const std::vector<float>& v) {
  std::vector<std::byte> first;
  for (const compress::Kernels* k : KernelSets()) {
    std::vector<std::byte> bytes;
    compress::EncodeWith(*k, codec, v, &bytes);
    FUZZ_CHECK(bytes.size() == compress::EncodedBytes(codec, v.size()));
    if (k == KernelSets().front()) first = bytes;
    FUZZ_CHECK(bytes == first);
  }
  bool finite = true;
  for (float x : v) finite = finite && std::isfinite(x);
  std::vector<float> d(v.size());
  FUZZ_CHECK(compress::Decode(codec, first, d).ok() == finite);
  if (!finite) return;
  CheckBound(codec, v, d, first);
  compress::ErrorFeedback feedback;
  std::vector<std::byte> sent;
  FUZZ_CHECK(feedback.Encode(codec, v, &sent).ok());
  FUZZ_CHECK(sent == first);
  for (size_t i = 0; i < v.size(); ++i) {
    const float rest = v[i] - d[i];
    FUZZ_CHECK(std::memcmp(&rest, &feedback.residual()[i], 4) == 0);
  }
}

int FuzzCompress(const uint8_t* data, size_t size) {
  if (size < 8) return 0;
  const uint8_t mode = data[0];
  Codec codec{static_cast<Kind>(mode % 8 % 5)};
  if (codec.kind == Kind::kTopK) codec.fraction = kFractions[(mode >> 3) & 7];
  const size_t raw = data[1] | data[2] << 8 | static_cast<size_t>(data[3]) << 16;
  const size_t n = raw % ((mode & 0x80) != 0 ? kMaxFloats : 4097);
  float scale;
  std::memcpy(&scale, data + 4, sizeof scale);
  if (!std::isfinite(scale)) scale = 0.5f;  // a NaN's payload is not the codecs' to keep
  // An exact-size copy, so that AddressSanitizer sees a read past the end.
  std::vector<std::byte> rest(size - 8);
  if (!rest.empty()) std::memcpy(rest.data(), data + 8, rest.size());
  if ((mode & 0x40) != 0) {
    std::vector<float> values(rest.size() / 4);
    if (!values.empty()) std::memcpy(values.data(), rest.data(), 4 * values.size());
    FuzzEncode(codec, values);
  } else {
    FuzzDecode(codec, rest, n, scale);
  }
  return 0;
}

}  // namespace
}  // namespace dmlps::fuzz

DMLPS_FUZZ_TARGET(FuzzCompress)
