// The digest of a model's floats that a server sends with the first model a
// worker gets after it joins, and that the worker checks against what it
// received (docs/algorithms-robustness.md, workers leaving and joining).
#ifndef DMLPS_PROTO_DIGEST_H_
#define DMLPS_PROTO_DIGEST_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace dmlps::proto {

// FNV-1a over 32-bit words. Taken piece by piece in order it equals the
// digest of the whole, so a streamed model is digested chunk by chunk as it
// goes out; a difference in any one float always changes it (each step is
// a bijection of the state). A check against loss and mix-ups, not against
// an adversary: CURVE guards the wire.
class ModelDigest {
 public:
  void Add(std::span<const float> values) { AddBytes(values.data(), values.size_bytes()); }
  // REQUIRES: `bytes` is a multiple of 4 (whole floats).
  void AddBytes(const void* data, size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i + 4 <= bytes; i += 4) {
      uint32_t word = 0;
      std::memcpy(&word, p + i, sizeof word);
      state_ = (state_ ^ word) * kPrime;
    }
  }
  // Never 0, which a message uses for "no digest".
  uint64_t value() const { return state_ == 0 ? 1 : state_; }

 private:
  static constexpr uint64_t kOffset = 0xcbf29ce484222325ULL;
  static constexpr uint64_t kPrime = 0x100000001b3ULL;
  uint64_t state_ = kOffset;
};

}  // namespace dmlps::proto

#endif  // DMLPS_PROTO_DIGEST_H_
