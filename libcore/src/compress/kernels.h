// The loops the codecs spend their time in, twice: plain C++ and AVX2 (with
// F16C and FMA), chosen once at run time as the softmax kernel chooses. Both
// sets give identical bytes and floats for every input, NaN and rounding
// ties included, so that two machines with different CPUs agree bit for bit
// (docs/compression.md, "Kernels"). The formats' layout, the checks of
// hostile bytes and the top-k threshold live in formats.cc, once for both.
//
// Encoded bytes are read and written through memcpy-sized loads and stores:
// a received frame need not be aligned.
#ifndef DMLPS_COMPRESS_KERNELS_H_
#define DMLPS_COMPRESS_KERNELS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "dmlps/compress/compress.h"

namespace dmlps::compress {

struct Kernels {
  const char* name;  // "scalar" or "avx2"
  // fp16 and bf16: n halves, 2 bytes each (scalar.cc says how they round).
  // The decoders agree for finite halves, all that Decode lets through: F16C
  // quiets a signalling NaN, the plain code keeps its bits.
  void (*fp16_encode)(const float* in, size_t n, std::byte* out);
  void (*fp16_decode)(const std::byte* in, size_t n, float* out);
  void (*fp16_decode_add)(const std::byte* in, size_t n, float scale, float* out);
  void (*bf16_encode)(const float* in, size_t n, std::byte* out);
  void (*bf16_decode)(const std::byte* in, size_t n, float* out);
  void (*bf16_decode_add)(const std::byte* in, size_t n, float scale, float* out);
  // The index of the first NaN or infinity among n halves or floats; n when
  // there is none.
  size_t (*fp16_first_nonfinite)(const std::byte* in, size_t n);
  size_t (*bf16_first_nonfinite)(const std::byte* in, size_t n);
  size_t (*f32_first_nonfinite)(const std::byte* in, size_t n);
  // out[i] = fma(scale, in[i], out[i]) over n floats.
  void (*f32_decode_add)(const std::byte* in, size_t n, float scale, float* out);
  // int8: ceil(n / kInt8Block) float32 scales, and n int8 values.
  void (*int8_encode)(const float* in, size_t n, std::byte* scales, std::byte* values);
  void (*int8_decode)(const std::byte* scales, const std::byte* values, size_t n, float* out);
  void (*int8_decode_add)(const std::byte* scales, const std::byte* values, size_t n, float scale,
                          float* out);
  // topk: in[begin, n) of one segment (n <= kTopKSegment). Writes, in
  // index order, each value whose magnitude key (its bits without the sign)
  // is above `threshold`, and the first *ties values whose key equals it
  // (counting *ties down), as a float32 to `values` and its index in the
  // segment as a uint16 to `offsets`. Returns how many it wrote.
  size_t (*topk_segment)(const float* in, size_t begin, size_t n, uint32_t threshold, size_t* ties,
                         std::byte* values, std::byte* offsets);
  // topk: counts the magnitude keys of n floats that are at least `floor`,
  // and writes the first `capacity` of them to `keys`, in index order.
  size_t (*topk_collect)(const float* in, size_t n, uint32_t floor, uint32_t* keys,
                         size_t capacity);
};

const Kernels& ScalarKernels();
// The AVX2 set, or nullptr when this build or this CPU lacks AVX2, F16C or FMA.
const Kernels* Avx2Kernels();
// What Encode, Decode and DecodeAdd use: the AVX2 set where it runs.
const Kernels& BestKernels();

// Encode, Decode and DecodeAdd on a given set of kernels (the tests and the
// benchmark compare them).
void EncodeWith(const Kernels& kernels, const Codec& codec, std::span<const float> values,
                std::vector<std::byte>* out);
Status DecodeWith(const Kernels& kernels, const Codec& codec, std::span<const std::byte> bytes,
                  std::span<float> out);
Status DecodeAddWith(const Kernels& kernels, const Codec& codec, std::span<const std::byte> bytes,
                     float scale, std::span<float> out);

// --- Shared by both sets: the arithmetic they must agree on. ---

// A float's magnitude key: its bits without the sign. Orders magnitudes, with
// infinity above every finite value and NaN above infinity.
inline uint32_t MagnitudeKey(uint32_t bits) { return bits & 0x7FFFFFFFu; }

// An int8 block's scale and the factor its values are multiplied by before
// rounding, from the block's largest magnitude key (see int8.cc).
struct Int8Scale {
  float scale = 0;     // written; decoded value = q * scale
  float inverse = 0;   // q = round(v * inverse); 0 for a block sent as zeros
  bool finite = true;  // false: a NaN or infinity, the block's values sent as 0
};
Int8Scale Int8ScaleFor(uint32_t max_key);

// The largest scale Decode accepts: q * scale stays finite for |q| <= 128.
inline constexpr float kInt8MaxScale = 3.4028234663852886e38f / 128.0f;

}  // namespace dmlps::compress

#endif  // DMLPS_COMPRESS_KERNELS_H_
