// libFuzzer target for the checkpoint reader (DecodeCheckpoint and
// ReadCheckpointFile in dmlps/server/checkpoint.h). The input is an option
// byte, then a checkpoint file as it lies on disk. Option bit 0 re-seals
// the file: its last 4 bytes are replaced by the CRC-32 of the rest, so
// that mutations reach the parsing behind the checksum.
//
// Contracts checked:
//   - reading fails only with DataLoss naming the source, never a crash;
//     ReadCheckpointFile on the same bytes gives the same answer;
//   - a checkpoint read is self-consistent: parameters present and finite,
//     optimizer state empty or one float per parameter, counts not negative
//     and within their bounds (kMaxCheckpointCount and its kin);
//   - it re-encodes to a file that reads back to the same checkpoint and
//     re-encodes to the same bytes (a fixed point);
//   - that file, cut short anywhere or with any one byte changed, is refused.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "dmlps/server/checkpoint.h"
#include "fuzz_util.h"

namespace dmlps::fuzz {
namespace {

constexpr std::string_view kSource = "fuzz-input";

bool Same(const server::Checkpoint& a, const server::Checkpoint& b) {
  return a.model == b.model && a.policy == b.policy && a.optimizer == b.optimizer &&
         a.workers == b.workers && a.iteration == b.iteration && a.version == b.version &&
         a.samples == b.samples && a.seconds == b.seconds && a.policy_extra == b.policy_extra &&
         *a.params == *b.params && a.optimizer_state == b.optimizer_state;
}

int FuzzCheckpoint(const uint8_t* data, size_t size) {
  static MemFile file("checkpoint");
  if (size == 0) return 0;
  std::string input(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) != 0 && input.size() >= 4) {
    const uint32_t crc = server::Crc32(std::string_view(input).substr(0, input.size() - 4));
    for (size_t i = 0; i < 4; ++i) {
      input[input.size() - 4 + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
    }
  }
  const std::string_view bytes = input;
  Result<server::Checkpoint> read = server::DecodeCheckpoint(bytes, std::string(kSource));

  file.Set(bytes);
  Result<server::Checkpoint> from_file = server::ReadCheckpointFile(file.path());
  FUZZ_CHECK(from_file.ok() == read.ok());
  if (!read.ok()) {
    FUZZ_CHECK(read.status().code() == StatusCode::kDataLoss);
    FUZZ_CHECK(read.status().message().starts_with(std::string(kSource) + ": "));
    FUZZ_CHECK(from_file.status().code() == StatusCode::kDataLoss);
    return 0;
  }
  const server::Checkpoint& c = *read;
  FUZZ_CHECK(Same(c, *from_file));
  FUZZ_CHECK(c.params != nullptr && !c.params->empty());
  for (float v : *c.params) FUZZ_CHECK(std::isfinite(v));
  FUZZ_CHECK(c.optimizer_state.empty() || c.optimizer_state.size() == c.params->size());
  FUZZ_CHECK(c.workers >= 1 && c.iteration >= 0 && c.version >= 0 && c.samples >= 0);
  FUZZ_CHECK(c.workers <= server::kMaxCheckpointWorkers);
  FUZZ_CHECK(c.iteration <= server::kMaxCheckpointCount);
  FUZZ_CHECK(c.version <= server::kMaxCheckpointCount);
  FUZZ_CHECK(c.samples <= server::kMaxCheckpointSamples);
  for (const int64_t v : c.policy_extra) {
    FUZZ_CHECK(v >= -server::kMaxCheckpointCount && v <= server::kMaxCheckpointCount);
  }
  FUZZ_CHECK(c.seconds >= 0 && std::isfinite(c.seconds));
  FUZZ_CHECK(!c.model.empty() && !c.policy.empty() && !c.optimizer.empty());

  const std::string encoded = server::EncodeCheckpoint(c);
  Result<server::Checkpoint> again = server::DecodeCheckpoint(encoded, std::string(kSource));
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(Same(c, *again));
  FUZZ_CHECK(server::EncodeCheckpoint(*again) == encoded);

  // Damage the input decides where: a cut, and one changed byte.
  const size_t where = (size_t{data[size / 2]} * 257 + size) % encoded.size();
  FUZZ_CHECK(
      !server::DecodeCheckpoint(std::string_view(encoded).substr(0, where), std::string(kSource))
           .ok());
  std::string flipped = encoded;
  flipped[where] = static_cast<char>(flipped[where] ^ (1 + data[0] % 255));
  FUZZ_CHECK(!server::DecodeCheckpoint(flipped, std::string(kSource)).ok());
  return 0;
}

}  // namespace
}  // namespace dmlps::fuzz

DMLPS_FUZZ_TARGET(FuzzCheckpoint)
