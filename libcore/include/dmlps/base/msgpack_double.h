// Packing doubles with msgpack-c without its one undefined cast.
//
// msgpack-c's packer::pack_double writes a whole double as the smallest
// integer that holds it, and tests wholeness by casting to uint64_t any
// double up to double(UINT64_MAX), which rounds to 2^64: 2^64 itself is out
// of uint64_t's range, so packing it is undefined behaviour (UBSan reports
// it; a peer or a crafted checkpoint can supply it). PackDouble writes the
// same bytes as pack_double for every other double, and float64 for 2^64.
//
// PackBuffer is a msgpack::sbuffer whose packer uses PackDouble for every
// double, the ones inside MSGPACK_DEFINE_MAP structs included; encode wire
// headers and checkpoints into one.
#pragma once

#include <cstdint>
#include <cstring>
#include <msgpack.hpp>

namespace dmlps {

template <typename Stream>
void PackDouble(msgpack::packer<Stream>& packer, Stream& out, double x) {
  constexpr double kTwo63 = 9223372036854775808.0;
  constexpr double kTwo64 = 18446744073709551616.0;
  if (x >= 0 && x < kTwo64 && x == static_cast<double>(static_cast<uint64_t>(x))) {
    packer.pack(static_cast<uint64_t>(x));
    return;
  }
  if (x < 0 && x >= -kTwo63 && x == static_cast<double>(static_cast<int64_t>(x))) {
    packer.pack(static_cast<int64_t>(x));
    return;
  }
  uint64_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  char bytes[9];
  bytes[0] = static_cast<char>(0xcb);
  for (int i = 0; i < 8; ++i) bytes[1 + i] = static_cast<char>(bits >> (56 - 8 * i));
  out.write(bytes, sizeof bytes);
}

class PackBuffer : public msgpack::sbuffer {};

}  // namespace dmlps

namespace msgpack {
MSGPACK_API_VERSION_NAMESPACE(v1) {
  template <>
  inline packer<dmlps::PackBuffer>& packer<dmlps::PackBuffer>::pack_double(double d) {
    dmlps::PackDouble(*this, m_stream, d);
    return *this;
  }
}  // MSGPACK_API_VERSION_NAMESPACE(v1)
}  // namespace msgpack
