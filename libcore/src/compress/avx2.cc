// The codecs' kernels with AVX2, F16C and FMA, compiled for them function by
// function and used only where the CPU has all three (Avx2Kernels). Each
// gives what scalar.cc gives, bit for bit: the same roundings (F16C rounds
// to nearest even; FMA rounds once, as std::fma), the same saturation and
// the same NaN. A block or segment's ragged end goes to the scalar kernel.
#include "compress/kernels.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DMLPS_COMPRESS_AVX2 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define DMLPS_COMPRESS_AVX2 0
#endif

#include <algorithm>
#include <cstring>

namespace dmlps::compress {

#if DMLPS_COMPRESS_AVX2
namespace {

#define DMLPS_COMPRESS_TARGET __attribute__((target("avx2,f16c,fma")))

DMLPS_COMPRESS_TARGET inline __m256i Keys(__m256i bits) {
  return _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF));
}

DMLPS_COMPRESS_TARGET void Avx2Fp16Encode(const float* in, size_t n, std::byte* out) {
  const __m256 hi = _mm256_set1_ps(65504.0f);
  const __m256 lo = _mm256_set1_ps(-65504.0f);
  const __m256i finite_max = _mm256_set1_epi32(0x7F7FFFFF);
  const __m256i inf = _mm256_set1_epi32(0x7F800000);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(in + i);
    const __m256i key = Keys(_mm256_castps_si256(x));
    const __m256i nonfinite = _mm256_cmpgt_epi32(key, finite_max);
    // Finite values saturate at the largest half; infinity and NaN pass.
    const __m256 clamped = _mm256_min_ps(_mm256_max_ps(x, lo), hi);
    const __m256 y = _mm256_blendv_ps(clamped, x, _mm256_castsi256_ps(nonfinite));
    __m128i h = _mm256_cvtps_ph(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256i nan = _mm256_cmpgt_epi32(key, inf);
    const __m128i nan16 =
        _mm_packs_epi32(_mm256_castsi256_si128(nan), _mm256_extracti128_si256(nan, 1));
    h = _mm_blendv_epi8(h, _mm_set1_epi16(0x7E00), nan16);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i), h);
  }
  ScalarKernels().fp16_encode(in + i, n - i, out + 2 * i);
}

DMLPS_COMPRESS_TARGET inline __m256 Fp16Floats(const std::byte* in) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in)));
}

// Eight bfloat16 of eight floats, in the low halves of 32-bit lanes.
DMLPS_COMPRESS_TARGET inline __m256i Bf16Lanes(__m256i bits) {
  const __m256i key = Keys(bits);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_add_epi32(_mm256_add_epi32(bits, _mm256_set1_epi32(0x7FFF)), lsb);
  __m256i h = _mm256_srli_epi32(rounded, 16);
  // A finite value that rounded to infinity saturates.
  const __m256i exponent = _mm256_set1_epi32(0x7F80);
  const __m256i over = _mm256_cmpeq_epi32(_mm256_and_si256(h, exponent), exponent);
  const __m256i saturated =
      _mm256_or_si256(_mm256_and_si256(h, _mm256_set1_epi32(0x8000)), _mm256_set1_epi32(0x7F7F));
  h = _mm256_blendv_epi8(h, saturated, over);
  const __m256i inf = _mm256_set1_epi32(0x7F800000);
  h = _mm256_blendv_epi8(h, _mm256_srli_epi32(bits, 16), _mm256_cmpeq_epi32(key, inf));
  return _mm256_blendv_epi8(h, _mm256_set1_epi32(0x7FC0), _mm256_cmpgt_epi32(key, inf));
}

DMLPS_COMPRESS_TARGET void Avx2Bf16Encode(const float* in, size_t n, std::byte* out) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i a = Bf16Lanes(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i)));
    const __m256i b = Bf16Lanes(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i + 8)));
    // packus works within 128-bit lanes: a0-3 b0-3 a4-7 b4-7, put in order.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xD8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * i), packed);
  }
  ScalarKernels().bf16_encode(in + i, n - i, out + 2 * i);
}

DMLPS_COMPRESS_TARGET inline __m256 Bf16Floats(const std::byte* in) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

// A 16-bit format's decoders: eight values at a time by Floats (the
// format's eight halves as floats), the ragged end by the scalar kernel
// `Tail` (and `AddTail`) of Kernels.
template <__m256 (*Floats)(const std::byte*), auto Tail>
DMLPS_COMPRESS_TARGET void DecodeHalves(const std::byte* in, size_t n, float* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, Floats(in + 2 * i));
  (ScalarKernels().*Tail)(in + 2 * i, n - i, out + i);
}

template <__m256 (*Floats)(const std::byte*), auto AddTail>
DMLPS_COMPRESS_TARGET void DecodeAddHalves(const std::byte* in, size_t n, float scale, float* out) {
  const __m256 s = _mm256_set1_ps(scale);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_fmadd_ps(s, Floats(in + 2 * i), _mm256_loadu_ps(out + i)));
  }
  (ScalarKernels().*AddTail)(in + 2 * i, n - i, scale, out + i);
}

// The first of 16 halves whose exponent bits are all set, as `mask` picks
// them; 16 when none is.
DMLPS_COMPRESS_TARGET size_t FirstHalfMatch(const std::byte* in, uint16_t mask) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in));
  const __m256i m = _mm256_set1_epi16(static_cast<int16_t>(mask));
  const auto bits =
      static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi16(_mm256_and_si256(h, m), m)));
  return bits == 0 ? 16 : static_cast<size_t>(__builtin_ctz(bits)) / 2;
}

// The first of n halves whose exponent bits (`mask`) are all set; the
// ragged end goes to `rest`, the scalar kernel.
DMLPS_COMPRESS_TARGET size_t FirstHalfNonfinite(const std::byte* in, size_t n, uint16_t mask,
                                                size_t (*rest)(const std::byte*, size_t)) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const size_t at = FirstHalfMatch(in + 2 * i, mask);
    if (at < 16) return i + at;
  }
  return i + rest(in + 2 * i, n - i);
}

DMLPS_COMPRESS_TARGET size_t Avx2Fp16FirstNonfinite(const std::byte* in, size_t n) {
  return FirstHalfNonfinite(in, n, 0x7C00, ScalarKernels().fp16_first_nonfinite);
}

DMLPS_COMPRESS_TARGET size_t Avx2Bf16FirstNonfinite(const std::byte* in, size_t n) {
  return FirstHalfNonfinite(in, n, 0x7F80, ScalarKernels().bf16_first_nonfinite);
}

DMLPS_COMPRESS_TARGET size_t Avx2F32FirstNonfinite(const std::byte* in, size_t n) {
  const __m256i finite_max = _mm256_set1_epi32(0x7F7FFFFF);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i key = Keys(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + 4 * i)));
    const int bits = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(key, finite_max)));
    if (bits != 0) return i + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(bits)));
  }
  return i + ScalarKernels().f32_first_nonfinite(in + 4 * i, n - i);
}

DMLPS_COMPRESS_TARGET void Avx2F32DecodeAdd(const std::byte* in, size_t n, float scale,
                                            float* out) {
  const __m256 s = _mm256_set1_ps(scale);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(reinterpret_cast<const float*>(in + 4 * i));
    _mm256_storeu_ps(out + i, _mm256_fmadd_ps(s, x, _mm256_loadu_ps(out + i)));
  }
  ScalarKernels().f32_decode_add(in + 4 * i, n - i, scale, out + i);
}

// The largest magnitude key of a whole block.
DMLPS_COMPRESS_TARGET uint32_t BlockMaxKey(const float* in) {
  __m256i m = _mm256_setzero_si256();
  for (size_t j = 0; j < kInt8Block; j += 8) {
    m = _mm256_max_epu32(m, Keys(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + j))));
  }
  __m128i r = _mm_max_epu32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
  r = _mm_max_epu32(r, _mm_shuffle_epi32(r, 0x4E));
  r = _mm_max_epu32(r, _mm_shuffle_epi32(r, 0xB1));
  return static_cast<uint32_t>(_mm_cvtsi128_si32(r));
}

// 32 floats times `inverse`, rounded to int8 in [-127, 127], in order.
DMLPS_COMPRESS_TARGET inline __m256i Quantize32(const float* in, __m256 inverse) {
  __m256i q[4];
  for (int k = 0; k < 4; ++k) {
    q[k] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(in + 8 * k), inverse));
  }
  // The packs interleave 128-bit lanes: a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 ...
  const __m256i bytes =
      _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  return _mm256_max_epi8(_mm256_permutevar8x32_epi32(bytes, order), _mm256_set1_epi8(-127));
}

DMLPS_COMPRESS_TARGET void Avx2Int8Encode(const float* in, size_t n, std::byte* scales,
                                          std::byte* values) {
  size_t begin = 0;
  size_t block = 0;
  for (; begin + kInt8Block <= n; begin += kInt8Block, ++block) {
    const Int8Scale s = Int8ScaleFor(BlockMaxKey(in + begin));
    std::memcpy(scales + 4 * block, &s.scale, sizeof s.scale);
    if (!s.finite) {
      std::memset(values + begin, 0, kInt8Block);
      continue;
    }
    const __m256 inverse = _mm256_set1_ps(s.inverse);
    for (size_t j = 0; j < kInt8Block; j += 32) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(values + begin + j),
                          Quantize32(in + begin + j, inverse));
    }
  }
  ScalarKernels().int8_encode(in + begin, n - begin, scales + 4 * block, values + begin);
}

// Eight int8 values at `q` times `scale`, rounded once.
DMLPS_COMPRESS_TARGET inline __m256 Dequantize8(const std::byte* q, __m256 scale) {
  const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q));
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes)), scale);
}

DMLPS_COMPRESS_TARGET void Avx2Int8Decode(const std::byte* scales, const std::byte* values,
                                          size_t n, float* out) {
  size_t begin = 0;
  size_t block = 0;
  for (; begin + kInt8Block <= n; begin += kInt8Block, ++block) {
    float scale;
    std::memcpy(&scale, scales + 4 * block, sizeof scale);
    const __m256 s = _mm256_set1_ps(scale);
    for (size_t j = begin; j < begin + kInt8Block; j += 8) {
      _mm256_storeu_ps(out + j, Dequantize8(values + j, s));
    }
  }
  ScalarKernels().int8_decode(scales + 4 * block, values + begin, n - begin, out + begin);
}

DMLPS_COMPRESS_TARGET void Avx2Int8DecodeAdd(const std::byte* scales, const std::byte* values,
                                             size_t n, float scale, float* out) {
  const __m256 weight = _mm256_set1_ps(scale);
  size_t begin = 0;
  size_t block = 0;
  for (; begin + kInt8Block <= n; begin += kInt8Block, ++block) {
    float block_scale;
    std::memcpy(&block_scale, scales + 4 * block, sizeof block_scale);
    const __m256 s = _mm256_set1_ps(block_scale);
    for (size_t j = begin; j < begin + kInt8Block; j += 8) {
      const __m256 sum =
          _mm256_fmadd_ps(weight, Dequantize8(values + j, s), _mm256_loadu_ps(out + j));
      _mm256_storeu_ps(out + j, sum);
    }
  }
  ScalarKernels().int8_decode_add(scales + 4 * block, values + begin, n - begin, scale,
                                  out + begin);
}

DMLPS_COMPRESS_TARGET size_t Avx2TopKSegment(const float* in, size_t begin, size_t n,
                                             uint32_t threshold, size_t* ties, std::byte* values,
                                             std::byte* offsets) {
  const __m256i t = _mm256_set1_epi32(static_cast<int32_t>(threshold));
  size_t count = 0;
  size_t i = begin;
  for (; i + 8 <= n; i += 8) {
    const __m256i key = Keys(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i)));
    // Keys are below 2^31: signed comparisons order them.
    const auto above =
        static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(key, t))));
    const auto equal =
        static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(key, t))));
    for (unsigned m = above | equal; m != 0; m &= m - 1) {
      const auto lane = static_cast<unsigned>(__builtin_ctz(m));
      if ((above >> lane & 1u) == 0) {
        if (*ties == 0) continue;
        --*ties;
      }
      const auto offset = static_cast<uint16_t>(i + lane);
      std::memcpy(values + 4 * count, in + i + lane, sizeof(float));
      std::memcpy(offsets + 2 * count, &offset, sizeof offset);
      ++count;
    }
  }
  return count + ScalarKernels().topk_segment(in, i, n, threshold, ties, values + 4 * count,
                                              offsets + 2 * count);
}

DMLPS_COMPRESS_TARGET size_t Avx2TopKCollect(const float* in, size_t n, uint32_t floor,
                                             uint32_t* keys, size_t capacity) {
  if (floor == 0) return ScalarKernels().topk_collect(in, n, floor, keys, capacity);
  // key >= floor as key > floor - 1: keys are below 2^31, signed order works.
  const __m256i below = _mm256_set1_epi32(static_cast<int32_t>(floor - 1));
  size_t count = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i key = Keys(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i)));
    auto m = static_cast<unsigned>(
        _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(key, below))));
    if (m == 0) continue;
    alignas(32) uint32_t lanes[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), key);
    for (; m != 0; m &= m - 1) {
      if (count < capacity) keys[count] = lanes[__builtin_ctz(m)];
      ++count;
    }
  }
  const size_t written = std::min(count, capacity);
  return count +
         ScalarKernels().topk_collect(in + i, n - i, floor, keys + written, capacity - written);
}

// AVX2 and FMA as the softmax kernel asks for them, and F16C from CPUID
// (leaf 1, ECX bit 29): the compilers' feature test does not know it.
bool CompressCpuHasAvx2() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 29)) != 0;
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
}

#undef DMLPS_COMPRESS_TARGET

}  // namespace

const Kernels* Avx2Kernels() {
  static const Kernels kAvx2 = {
      .name = "avx2",
      .fp16_encode = Avx2Fp16Encode,
      .fp16_decode = DecodeHalves<Fp16Floats, &Kernels::fp16_decode>,
      .fp16_decode_add = DecodeAddHalves<Fp16Floats, &Kernels::fp16_decode_add>,
      .bf16_encode = Avx2Bf16Encode,
      .bf16_decode = DecodeHalves<Bf16Floats, &Kernels::bf16_decode>,
      .bf16_decode_add = DecodeAddHalves<Bf16Floats, &Kernels::bf16_decode_add>,
      .fp16_first_nonfinite = Avx2Fp16FirstNonfinite,
      .bf16_first_nonfinite = Avx2Bf16FirstNonfinite,
      .f32_first_nonfinite = Avx2F32FirstNonfinite,
      .f32_decode_add = Avx2F32DecodeAdd,
      .int8_encode = Avx2Int8Encode,
      .int8_decode = Avx2Int8Decode,
      .int8_decode_add = Avx2Int8DecodeAdd,
      .topk_segment = Avx2TopKSegment,
      .topk_collect = Avx2TopKCollect,
  };
  static const bool has = CompressCpuHasAvx2();
  return has ? &kAvx2 : nullptr;
}
#else
const Kernels* Avx2Kernels() { return nullptr; }
#endif  // DMLPS_COMPRESS_AVX2

#undef DMLPS_COMPRESS_AVX2

const Kernels& BestKernels() {
  static const Kernels& best = Avx2Kernels() != nullptr ? *Avx2Kernels() : ScalarKernels();
  return best;
}

}  // namespace dmlps::compress
