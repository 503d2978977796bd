// Compression codecs for the float vectors that pushes and pulls carry
// (docs/compression.md): float16, bfloat16, int8 scaled per block, and
// top-k, each a byte format with an exact size, an encoder, and a decoder
// that treats its bytes as a peer's, hostile until checked.
//
// How the parts fit a parameter server:
//   - a worker encodes its gradient (or pseudo-gradient) through an
//     ErrorFeedback, which carries what the codec dropped into its next send;
//   - the server sums the decoded pushes into its dense buffer with
//     DecodeAdd (no dense temporary), one weight per push;
//   - a pull may send the model's change since the worker's last pull: the
//     server keeps a copy of what the worker holds, sends
//     Encode(model - copy) and applies DecodeAdd(bytes, 1, copy), while the
//     worker applies the same DecodeAdd to its parameters. Both sides then
//     hold the same floats bit for bit, because decoding is deterministic
//     and the vectorized and scalar kernels give identical results.
//
// Every byte format is little-endian, as the dense float frames are.
#ifndef DMLPS_COMPRESS_COMPRESS_H_
#define DMLPS_COMPRESS_COMPRESS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/base/status.h"

namespace dmlps::compress {

enum class Kind : uint8_t { kNone = 0, kFp16 = 1, kBf16 = 2, kInt8 = 3, kTopK = 4 };

struct Codec {
  Kind kind = Kind::kNone;
  double fraction = 0;  // kTopK: the share of coordinates sent, 0 < fraction <= 1

  bool operator==(const Codec&) const = default;
};

// int8: floats per block, each block with a float32 scale of its own.
inline constexpr size_t kInt8Block = 256;
// topk: coordinates per segment; an offset within one fits 16 bits.
inline constexpr size_t kTopKSegment = 65536;

// Parses "none", "fp16", "bf16", "int8" or "topk:F" (0 < F <= 1, e.g.
// "topk:0.01"); a one-line InvalidArgument naming the accepted spellings
// otherwise.
Result<Codec> ParseCodec(std::string_view text);
// The spelling ParseCodec reads back into the same codec ("topk:0.01").
std::string CodecName(const Codec& codec);
// InvalidArgument when a codec built by hand is not one ParseCodec gives.
Status ValidateCodec(const Codec& codec);

// topk: the coordinates sent of n, max(1, ceil(fraction * n)), at most n.
size_t TopKCount(double fraction, size_t n);
// The exact size in bytes of Encode's output for n floats.
size_t EncodedBytes(const Codec& codec, size_t n);

// Replaces *out with `values` encoded. REQUIRES: ValidateCodec(codec) ok.
// Total: a NaN or infinity is never dropped or made finite, it encodes to
// bytes that Decode refuses (docs/compression.md, "Non-finite values").
void Encode(const Codec& codec, std::span<const float> values, std::vector<std::byte>* out);

// out = the decoded values of `bytes`, which must be EncodedBytes(codec,
// out.size()) long. On any problem (a wrong size, a non-finite value or
// scale, a top-k offset out of range or out of order, an invalid codec) a
// one-line InvalidArgument, and `out` is left as it was: the bytes are
// checked whole before anything is written.
Status Decode(const Codec& codec, std::span<const std::byte> bytes, std::span<float> out);

// out[i] = fma(scale, decoded[i], out[i]), one rounding, without a dense
// temporary: what Decode into a buffer and that fused multiply-add would
// give, bit for bit. Refuses as Decode does, and then writes nothing.
Status DecodeAdd(const Codec& codec, std::span<const std::byte> bytes, float scale,
                 std::span<float> out);

// One sender's error feedback: what the codec did not send so far, added to
// the next values before they are encoded. Over any run of sends, the sum of
// everything decoded plus residual() equals the sum of the values given, up
// to float rounding; under top-k, while all values stay below some M in
// magnitude, every coordinate whose values keep one sign and stay above some
// m > 0 is sent within 2 n (M / m + 1) / k sends (docs/compression.md,
// "Error feedback").
class ErrorFeedback {
 public:
  // Encodes values + residual into *out; then residual := (values +
  // residual) - decoded(*out). The residual takes the size of the first
  // values, and later values must keep it (InvalidArgument otherwise). When
  // values + residual is not finite somewhere, InvalidArgument and nothing
  // changes: neither *out nor the residual. REQUIRES: ValidateCodec(codec) ok.
  Status Encode(const Codec& codec, std::span<const float> values, std::vector<std::byte>* out);
  // Forgets the residual (a sender that leaves, or a new size).
  void Reset();
  std::span<const float> residual() const { return residual_; }

 private:
  std::vector<float> residual_;
  std::vector<float> corrected_;  // values + residual, reused between sends
  bool sized_ = false;            // the residual has taken the first values' size
};

}  // namespace dmlps::compress

#endif  // DMLPS_COMPRESS_COMPRESS_H_
