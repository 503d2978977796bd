#include "dmlps/compress/compress.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <system_error>

#include "compress/kernels.h"

namespace dmlps::compress {
namespace {

constexpr std::string_view kSpellings = "none, fp16, bf16, int8 or topk:F with 0 < F <= 1";

}  // namespace

Result<Codec> ParseCodec(std::string_view text) {
  if (text == "none") return Codec{Kind::kNone};
  if (text == "fp16") return Codec{Kind::kFp16};
  if (text == "bf16") return Codec{Kind::kBf16};
  if (text == "int8") return Codec{Kind::kInt8};
  constexpr std::string_view kTopK = "topk:";
  if (text.starts_with(kTopK)) {
    const std::string_view number = text.substr(kTopK.size());
    double fraction = 0;
    const auto [end, error] =
        std::from_chars(number.data(), number.data() + number.size(), fraction);
    if (!number.empty() && error == std::errc() && end == number.data() + number.size() &&
        fraction > 0 && fraction <= 1) {
      return Codec{Kind::kTopK, fraction};
    }
  }
  return Status::InvalidArgument(fmt::format("'{}' is not a codec: {}", text, kSpellings));
}

std::string CodecName(const Codec& codec) {
  switch (codec.kind) {
    case Kind::kNone:
      return "none";
    case Kind::kFp16:
      return "fp16";
    case Kind::kBf16:
      return "bf16";
    case Kind::kInt8:
      return "int8";
    case Kind::kTopK: {
      // The shortest spelling that reads back as the same double.
      char buffer[32];
      const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, codec.fraction);
      return "topk:" + std::string(buffer, error == std::errc() ? end : buffer);
    }
  }
  return fmt::format("codec {}", static_cast<int>(codec.kind));
}

Status ValidateCodec(const Codec& codec) {
  switch (codec.kind) {
    case Kind::kNone:
    case Kind::kFp16:
    case Kind::kBf16:
    case Kind::kInt8:
      if (codec.fraction == 0) return Status::Ok();
      break;
    case Kind::kTopK:
      if (codec.fraction > 0 && codec.fraction <= 1) return Status::Ok();
      break;
  }
  return Status::InvalidArgument(fmt::format("{} (fraction {}) is not a codec: {}",
                                             CodecName(codec), codec.fraction, kSpellings));
}

size_t TopKCount(double fraction, size_t n) {
  if (n == 0) return 0;
  if (!(fraction > 0)) return 1;  // NaN too
  if (fraction >= 1) return n;
  const double k = std::ceil(fraction * static_cast<double>(n));
  return std::clamp(static_cast<size_t>(k), size_t{1}, n);
}

size_t EncodedBytes(const Codec& codec, size_t n) {
  switch (codec.kind) {
    case Kind::kNone:
      return 4 * n;
    case Kind::kFp16:
    case Kind::kBf16:
      return 2 * n;
    case Kind::kInt8:
      return 4 * ((n + kInt8Block - 1) / kInt8Block) + n;
    case Kind::kTopK:
      return 4 * ((n + kTopKSegment - 1) / kTopKSegment) + 6 * TopKCount(codec.fraction, n);
  }
  return 4 * n;
}

void Encode(const Codec& codec, std::span<const float> values, std::vector<std::byte>* out) {
  EncodeWith(BestKernels(), codec, values, out);
}

Status Decode(const Codec& codec, std::span<const std::byte> bytes, std::span<float> out) {
  return DecodeWith(BestKernels(), codec, bytes, out);
}

Status DecodeAdd(const Codec& codec, std::span<const std::byte> bytes, float scale,
                 std::span<float> out) {
  return DecodeAddWith(BestKernels(), codec, bytes, scale, out);
}

Status ErrorFeedback::Encode(const Codec& codec, std::span<const float> values,
                             std::vector<std::byte>* out) {
  const size_t n = values.size();
  if (sized_ && residual_.size() != n) {
    return Status::InvalidArgument(
        fmt::format("{} values sent where the residual holds {}", n, residual_.size()));
  }
  corrected_.resize(n);
  if (sized_) {
    for (size_t i = 0; i < n; ++i) corrected_[i] = values[i] + residual_[i];
  } else {
    std::copy(values.begin(), values.end(), corrected_.begin());
  }
  const Kernels& kernels = BestKernels();
  const size_t bad =
      kernels.f32_first_nonfinite(reinterpret_cast<const std::byte*>(corrected_.data()), n);
  if (bad < n) {
    return Status::InvalidArgument(fmt::format("value {} ({}) plus its residual ({}) is not finite",
                                               bad, values[bad], sized_ ? residual_[bad] : 0.0f));
  }
  EncodeWith(kernels, codec, corrected_, out);
  // residual := corrected - decoded, in place: fma(-1, d, c) is c - d exactly rounded.
  residual_.swap(corrected_);
  sized_ = true;
  Status subtracted = DecodeAddWith(kernels, codec, *out, -1.0f, residual_);
  if (!subtracted.ok()) return Status::Internal("error feedback: " + subtracted.message());
  return Status::Ok();
}

void ErrorFeedback::Reset() {
  residual_.clear();
  corrected_.clear();
  sized_ = false;
}

}  // namespace dmlps::compress
