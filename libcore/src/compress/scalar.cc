// The codecs' kernels in plain C++: the reference the AVX2 set must match
// bit for bit, and the set a CPU without AVX2 runs. The half and bfloat16
// conversions are integer arithmetic on the floats' bits, so that the
// floating-point environment does not change them; the sums are std::fma,
// one rounding as FMA's (docs/compression.md, "Kernels").
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "compress/kernels.h"

namespace dmlps::compress {
namespace {

uint32_t FloatBits(float f) { return std::bit_cast<uint32_t>(f); }
float BitsFloat(uint32_t b) { return std::bit_cast<float>(b); }

uint16_t LoadU16(const std::byte* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
void StoreU16(std::byte* p, uint16_t v) { std::memcpy(p, &v, sizeof v); }
float LoadF32(const std::byte* p) {
  float v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
void StoreF32(std::byte* p, float v) { std::memcpy(p, &v, sizeof v); }

// float32 to float16, rounding to nearest even; a finite value beyond the
// largest half (65504) saturates to it; infinity stays infinity; every NaN
// becomes 0x7E00.
uint16_t HalfFromFloat(float f) {
  const uint32_t bits = FloatBits(f);
  const auto sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t a = MagnitudeKey(bits);
  if (a > 0x7F800000u) return 0x7E00;
  if (a == 0x7F800000u) return sign | 0x7C00;
  // 65520 and above would round to infinity.
  if (a >= 0x477FF000u) return sign | 0x7BFF;
  if (a >= 0x38800000u) {  // a normal half, 2^-14 and above
    // Rebias the exponent (127 - 15), then round the 13 bits dropped.
    uint32_t m = a - 0x38000000u;
    m += 0xFFFu + ((m >> 13) & 1u);
    return sign | static_cast<uint16_t>(m >> 13);
  }
  // A subnormal half (units of 2^-24) or zero. 2^-25 and less round to 0.
  if (a <= 0x33000000u) return sign;
  const uint32_t exponent = a >> 23;  // 102 to 112
  const uint32_t mantissa = (a & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126 - exponent;  // 14 to 24
  uint32_t q = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (q & 1u) != 0)) ++q;
  return sign | static_cast<uint16_t>(q);
}

// float16 to float32, exactly (every half is a float).
float FloatFromHalf(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  const uint32_t mantissa = h & 0x3FFu;
  if (exponent == 0x1F) return BitsFloat(sign | 0x7F800000u | (mantissa << 13));
  if (exponent == 0) {
    // m * 2^-24: exact, and a normal float.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return BitsFloat(sign | FloatBits(magnitude));
  }
  return BitsFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

// float32 to bfloat16, rounding to nearest even; a finite value that would
// round to infinity saturates to the largest bfloat16; infinity stays; every
// NaN becomes 0x7FC0.
uint16_t Bf16FromFloat(float f) {
  const uint32_t bits = FloatBits(f);
  const uint32_t a = MagnitudeKey(bits);
  if (a > 0x7F800000u) return 0x7FC0;
  if (a == 0x7F800000u) return static_cast<uint16_t>(bits >> 16);
  const uint32_t rounded = bits + 0x7FFFu + ((bits >> 16) & 1u);
  auto h = static_cast<uint16_t>(rounded >> 16);
  if ((h & 0x7F80u) == 0x7F80u) h = static_cast<uint16_t>((h & 0x8000u) | 0x7F7Fu);
  return h;
}

float FloatFromBf16(uint16_t h) { return BitsFloat(static_cast<uint32_t>(h) << 16); }

// The loops over n halves or bfloat16, 2 bytes each, given their conversion.
template <uint16_t (*Narrow)(float)>
void EncodeHalves(const float* in, size_t n, std::byte* out) {
  for (size_t i = 0; i < n; ++i) StoreU16(out + 2 * i, Narrow(in[i]));
}
template <float (*Widen)(uint16_t)>
void DecodeHalves(const std::byte* in, size_t n, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = Widen(LoadU16(in + 2 * i));
}
template <float (*Widen)(uint16_t)>
void DecodeAddHalves(const std::byte* in, size_t n, float scale, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = std::fma(scale, Widen(LoadU16(in + 2 * i)), out[i]);
}
// NaN and infinity have every exponent bit set: kExponent picks them.
template <uint16_t kExponent>
size_t FirstNonfiniteHalf(const std::byte* in, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if ((LoadU16(in + 2 * i) & kExponent) == kExponent) return i;
  }
  return n;
}
size_t F32FirstNonfinite(const std::byte* in, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (MagnitudeKey(FloatBits(LoadF32(in + 4 * i))) >= 0x7F800000u) return i;
  }
  return n;
}
void F32DecodeAdd(const std::byte* in, size_t n, float scale, float* out) {
  for (size_t i = 0; i < n; ++i) out[i] = std::fma(scale, LoadF32(in + 4 * i), out[i]);
}

void Int8Encode(const float* in, size_t n, std::byte* scales, std::byte* values) {
  for (size_t begin = 0, block = 0; begin < n; begin += kInt8Block, ++block) {
    const size_t end = std::min(n, begin + kInt8Block);
    uint32_t max_key = 0;
    for (size_t i = begin; i < end; ++i)
      max_key = std::max(max_key, MagnitudeKey(FloatBits(in[i])));
    const Int8Scale s = Int8ScaleFor(max_key);
    StoreF32(scales + 4 * block, s.scale);
    for (size_t i = begin; i < end; ++i) {
      long q = 0;
      if (s.finite) q = std::clamp(std::lrint(in[i] * s.inverse), -127L, 127L);
      values[i] = static_cast<std::byte>(static_cast<int8_t>(q));
    }
  }
}

float Int8Value(std::byte q, float scale) {
  return static_cast<float>(static_cast<int8_t>(q)) * scale;
}

void Int8Decode(const std::byte* scales, const std::byte* values, size_t n, float* out) {
  for (size_t begin = 0, block = 0; begin < n; begin += kInt8Block, ++block) {
    const float s = LoadF32(scales + 4 * block);
    const size_t end = std::min(n, begin + kInt8Block);
    for (size_t i = begin; i < end; ++i) out[i] = Int8Value(values[i], s);
  }
}
void Int8DecodeAdd(const std::byte* scales, const std::byte* values, size_t n, float scale,
                   float* out) {
  for (size_t begin = 0, block = 0; begin < n; begin += kInt8Block, ++block) {
    const float s = LoadF32(scales + 4 * block);
    const size_t end = std::min(n, begin + kInt8Block);
    for (size_t i = begin; i < end; ++i) out[i] = std::fma(scale, Int8Value(values[i], s), out[i]);
  }
}

size_t TopKSegment(const float* in, size_t begin, size_t n, uint32_t threshold, size_t* ties,
                   std::byte* values, std::byte* offsets) {
  size_t count = 0;
  for (size_t i = begin; i < n; ++i) {
    const uint32_t key = MagnitudeKey(FloatBits(in[i]));
    if (key < threshold) continue;
    if (key == threshold) {
      if (*ties == 0) continue;
      --*ties;
    }
    StoreF32(values + 4 * count, in[i]);
    StoreU16(offsets + 2 * count, static_cast<uint16_t>(i));
    ++count;
  }
  return count;
}

size_t TopKCollect(const float* in, size_t n, uint32_t floor, uint32_t* keys, size_t capacity) {
  size_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t key = MagnitudeKey(FloatBits(in[i]));
    if (key < floor) continue;
    if (count < capacity) keys[count] = key;
    ++count;
  }
  return count;
}

}  // namespace

const Kernels& ScalarKernels() {
  static const Kernels kScalar = {
      .name = "scalar",
      .fp16_encode = EncodeHalves<HalfFromFloat>,
      .fp16_decode = DecodeHalves<FloatFromHalf>,
      .fp16_decode_add = DecodeAddHalves<FloatFromHalf>,
      .bf16_encode = EncodeHalves<Bf16FromFloat>,
      .bf16_decode = DecodeHalves<FloatFromBf16>,
      .bf16_decode_add = DecodeAddHalves<FloatFromBf16>,
      .fp16_first_nonfinite = FirstNonfiniteHalf<0x7C00>,
      .bf16_first_nonfinite = FirstNonfiniteHalf<0x7F80>,
      .f32_first_nonfinite = F32FirstNonfinite,
      .f32_decode_add = F32DecodeAdd,
      .int8_encode = Int8Encode,
      .int8_decode = Int8Decode,
      .int8_decode_add = Int8DecodeAdd,
      .topk_segment = TopKSegment,
      .topk_collect = TopKCollect,
  };
  return kScalar;
}

}  // namespace dmlps::compress
