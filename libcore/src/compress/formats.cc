// The codecs' byte formats (docs/compression.md, "Formats"): where each part
// lies, the checks that bytes from a peer pass before anything is written,
// the int8 scales and the top-k threshold. The loops over the values are the
// kernels', so that both kernel sets share everything here.
#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cassert>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "compress/kernels.h"

namespace dmlps::compress {
namespace {

uint32_t LoadU32(const std::byte* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
uint16_t LoadOffset(const std::byte* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
float LoadFloat(const std::byte* p) {
  float v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

size_t Blocks(size_t n) { return (n + kInt8Block - 1) / kInt8Block; }
size_t Segments(size_t n) { return (n + kTopKSegment - 1) / kTopKSegment; }
size_t SegmentLength(size_t n, size_t segment) {
  return std::min(kTopKSegment, n - segment * kTopKSegment);
}

Status Refuse(const Codec& codec, const std::string& what) {
  return Status::InvalidArgument(CodecName(codec) + ": " + what);
}

// --- top-k: the k-th largest magnitude key, by radix selection ---

// The bin holding the rank-th largest key, walking down from the top bin;
// *rank becomes the rank within that bin and *above counts the keys above.
size_t PickBin(const size_t* hist, size_t bins, size_t* rank, size_t* above) {
  for (size_t b = bins; b-- > 0;) {
    if (hist[b] >= *rank) return b;
    *rank -= hist[b];
    *above += hist[b];
  }
  assert(false && "rank beyond the keys");
  return 0;
}

// The k-th largest magnitude key of `items` (floats, or keys already; 1 <=
// k <= items.size()), and in *above the number of keys larger than it. Three
// passes of 11, 10 and 10 bits; after the first, only the keys in the
// chosen bin are looked at.
template <typename T>
uint32_t KthLargestKey(std::span<const T> items, size_t k, size_t* above) {
  *above = 0;
  size_t rank = k;
  std::array<size_t, 2048> top{};
  for (T v : items) ++top[MagnitudeKey(std::bit_cast<uint32_t>(v)) >> 20];
  const size_t b1 = PickBin(top.data(), top.size(), &rank, above);
  std::vector<uint32_t> keys;
  keys.reserve(top[b1]);
  for (T v : items) {
    const uint32_t key = MagnitudeKey(std::bit_cast<uint32_t>(v));
    if (key >> 20 == b1) keys.push_back(key);
  }
  uint32_t threshold = static_cast<uint32_t>(b1) << 20;
  for (const int shift : {10, 0}) {
    std::array<size_t, 1024> hist{};
    for (uint32_t key : keys) ++hist[(key >> shift) & 0x3FF];
    const size_t b = PickBin(hist.data(), hist.size(), &rank, above);
    threshold |= static_cast<uint32_t>(b) << shift;
    std::erase_if(keys, [&](uint32_t key) { return ((key >> shift) & 0x3FF) != b; });
  }
  return threshold;
}

// KthLargestKey of `values`, found faster on a large vector: the k-th
// largest key of every 64th value, a little lower than its expected rank,
// bounds the threshold from below, and one vectorized pass keeps the keys
// above that bound, about k of them, to select from. When the sample
// misleads (fewer than k keys kept, or far more), all the keys are selected
// from instead: the result is the same, only slower.
uint32_t TopKThreshold(const Kernels& kernels, std::span<const float> values, size_t k,
                       size_t* above) {
  constexpr size_t kStride = 64;
  const size_t n = values.size();
  if (n >= 64 * kStride) {
    std::vector<uint32_t> sample;
    sample.reserve(n / kStride + 1);
    for (size_t i = 0; i < n; i += kStride) {
      sample.push_back(MagnitudeKey(std::bit_cast<uint32_t>(values[i])));
    }
    const double expected =
        static_cast<double>(k) * static_cast<double>(sample.size()) / static_cast<double>(n);
    const auto rank = static_cast<size_t>(expected + 4 * std::sqrt(expected) + 8);
    if (rank <= sample.size()) {
      size_t ignored = 0;
      const uint32_t floor = KthLargestKey(std::span<const uint32_t>(sample), rank, &ignored);
      std::vector<uint32_t> keys(2 * k + 4096);
      const size_t kept = kernels.topk_collect(values.data(), n, floor, keys.data(), keys.size());
      if (kept >= k && kept <= keys.size()) {
        keys.resize(kept);
        return KthLargestKey(std::span<const uint32_t>(keys), k, above);
      }
    }
  }
  return KthLargestKey(values, k, above);
}

void EncodeTopK(const Kernels& kernels, const Codec& codec, std::span<const float> values,
                std::byte* out) {
  const size_t n = values.size();
  const size_t k = TopKCount(codec.fraction, n);
  if (k == 0) return;
  const size_t segments = Segments(n);
  std::byte* value_part = out + 4 * segments;
  std::byte* offset_part = value_part + 4 * k;
  size_t above = 0;
  const uint32_t threshold = TopKThreshold(kernels, values, k, &above);
  size_t ties = k - above;
  size_t written = 0;
  for (size_t s = 0; s < segments; ++s) {
    const size_t count =
        kernels.topk_segment(values.data() + s * kTopKSegment, 0, SegmentLength(n, s), threshold,
                             &ties, value_part + 4 * written, offset_part + 2 * written);
    const auto count32 = static_cast<uint32_t>(count);
    std::memcpy(out + 4 * s, &count32, sizeof count32);
    written += count;
  }
  assert(written == k && ties == 0);
}

// --- checks of bytes from a peer ---

Status CheckInt8(const Codec& codec, const std::byte* scales, size_t n) {
  for (size_t b = 0; b < Blocks(n); ++b) {
    const float s = LoadFloat(scales + 4 * b);
    if (!(s >= 0.0f && s <= kInt8MaxScale)) {
      return Refuse(codec, fmt::format("block {} has scale {}, not a finite number from 0 to {}", b,
                                       s, kInt8MaxScale));
    }
  }
  return Status::Ok();
}

Status CheckTopK(const Kernels& kernels, const Codec& codec, const std::byte* bytes, size_t n) {
  const size_t k = TopKCount(codec.fraction, n);
  const size_t segments = Segments(n);
  const std::byte* offsets = bytes + 4 * segments + 4 * k;
  size_t total = 0;
  for (size_t s = 0; s < segments; ++s) {
    const size_t count = LoadU32(bytes + 4 * s);
    const size_t length = SegmentLength(n, s);
    if (count > length) {
      return Refuse(codec, fmt::format("segment {} counts {} values, more than its {} coordinates",
                                       s, count, length));
    }
    if (count > k - total) {
      return Refuse(codec, fmt::format("the segments count more than the {} values sent", k));
    }
    for (size_t j = total; j < total + count; ++j) {
      const size_t offset = LoadOffset(offsets + 2 * j);
      if (offset >= length) {
        return Refuse(codec, fmt::format("offset {} of segment {} is beyond its {} coordinates",
                                         offset, s, length));
      }
      if (j > total && offset <= LoadOffset(offsets + 2 * (j - 1))) {
        return Refuse(codec, fmt::format("the offsets of segment {} do not ascend at value {}", s,
                                         j - total));
      }
    }
    total += count;
  }
  if (total != k) {
    return Refuse(codec, fmt::format("the segments count {} values, not the {} sent", total, k));
  }
  const size_t bad = kernels.f32_first_nonfinite(bytes + 4 * segments, k);
  if (bad < k) return Refuse(codec, fmt::format("value {} is not finite", bad));
  return Status::Ok();
}

// Every check Decode makes before it writes.
Status Check(const Kernels& kernels, const Codec& codec, std::span<const std::byte> bytes,
             size_t n) {
  DMLPS_RETURN_IF_ERROR(ValidateCodec(codec));
  const size_t want = EncodedBytes(codec, n);
  if (bytes.size() != want) {
    return Refuse(codec, fmt::format("{} floats take {} bytes, not {}", n, want, bytes.size()));
  }
  size_t bad = n;
  switch (codec.kind) {
    case Kind::kNone:
      bad = kernels.f32_first_nonfinite(bytes.data(), n);
      break;
    case Kind::kFp16:
      bad = kernels.fp16_first_nonfinite(bytes.data(), n);
      break;
    case Kind::kBf16:
      bad = kernels.bf16_first_nonfinite(bytes.data(), n);
      break;
    case Kind::kInt8:
      return CheckInt8(codec, bytes.data(), n);
    case Kind::kTopK:
      return CheckTopK(kernels, codec, bytes.data(), n);
  }
  if (bad < n) return Refuse(codec, fmt::format("value {} is not finite", bad));
  return Status::Ok();
}

// Calls add(index, value) for each value top-k bytes carry. REQUIRES: checked.
template <typename Add>
void ForEachTopK(const Codec& codec, const std::byte* bytes, size_t n, const Add& add) {
  const size_t k = TopKCount(codec.fraction, n);
  const size_t segments = Segments(n);
  const std::byte* values = bytes + 4 * segments;
  const std::byte* offsets = values + 4 * k;
  size_t j = 0;
  for (size_t s = 0; s < segments; ++s) {
    const size_t end = j + LoadU32(bytes + 4 * s);
    for (; j < end; ++j) {
      add(s * kTopKSegment + LoadOffset(offsets + 2 * j), LoadFloat(values + 4 * j));
    }
  }
}

}  // namespace

Int8Scale Int8ScaleFor(uint32_t max_key) {
  Int8Scale s;
  if (max_key >= 0x7F800000u) {  // infinity or NaN: a scale Decode refuses
    s.scale = std::bit_cast<float>(max_key);
    s.finite = false;
    return s;
  }
  const float max = std::bit_cast<float>(max_key);
  // Below this the scale would be subnormal and 127 / max could overflow:
  // the block goes as zeros (scale 0, inverse 0).
  if (max < 127.0f * FLT_MIN) return s;
  s.scale = std::min(max / 127.0f, kInt8MaxScale);
  s.inverse = 127.0f / max;
  return s;
}

void EncodeWith(const Kernels& kernels, const Codec& codec, std::span<const float> values,
                std::vector<std::byte>* out) {
  assert(ValidateCodec(codec).ok());
  const size_t n = values.size();
  out->resize(EncodedBytes(codec, n));
  std::byte* bytes = out->data();
  switch (codec.kind) {
    case Kind::kNone:
      if (n > 0) std::memcpy(bytes, values.data(), 4 * n);
      break;
    case Kind::kFp16:
      kernels.fp16_encode(values.data(), n, bytes);
      break;
    case Kind::kBf16:
      kernels.bf16_encode(values.data(), n, bytes);
      break;
    case Kind::kInt8:
      kernels.int8_encode(values.data(), n, bytes, bytes + 4 * Blocks(n));
      break;
    case Kind::kTopK:
      EncodeTopK(kernels, codec, values, bytes);
      break;
  }
}

Status DecodeWith(const Kernels& kernels, const Codec& codec, std::span<const std::byte> bytes,
                  std::span<float> out) {
  const size_t n = out.size();
  DMLPS_RETURN_IF_ERROR(Check(kernels, codec, bytes, n));
  const std::byte* in = bytes.data();
  switch (codec.kind) {
    case Kind::kNone:
      if (n > 0) std::memcpy(out.data(), in, 4 * n);
      break;
    case Kind::kFp16:
      kernels.fp16_decode(in, n, out.data());
      break;
    case Kind::kBf16:
      kernels.bf16_decode(in, n, out.data());
      break;
    case Kind::kInt8:
      kernels.int8_decode(in, in + 4 * Blocks(n), n, out.data());
      break;
    case Kind::kTopK:
      std::fill(out.begin(), out.end(), 0.0f);
      ForEachTopK(codec, in, n, [&](size_t i, float v) { out[i] = v; });
      break;
  }
  return Status::Ok();
}

Status DecodeAddWith(const Kernels& kernels, const Codec& codec, std::span<const std::byte> bytes,
                     float scale, std::span<float> out) {
  const size_t n = out.size();
  DMLPS_RETURN_IF_ERROR(Check(kernels, codec, bytes, n));
  const std::byte* in = bytes.data();
  switch (codec.kind) {
    case Kind::kNone:
      kernels.f32_decode_add(in, n, scale, out.data());
      break;
    case Kind::kFp16:
      kernels.fp16_decode_add(in, n, scale, out.data());
      break;
    case Kind::kBf16:
      kernels.bf16_decode_add(in, n, scale, out.data());
      break;
    case Kind::kInt8:
      kernels.int8_decode_add(in, in + 4 * Blocks(n), n, scale, out.data());
      break;
    case Kind::kTopK:
      ForEachTopK(codec, in, n, [&](size_t i, float v) { out[i] = std::fma(scale, v, out[i]); });
      break;
  }
  return Status::Ok();
}

}  // namespace dmlps::compress
