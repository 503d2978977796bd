// libFuzzer target for the trace reader (ParseTrace in dmlps/trace/trace.h);
// the input is a trace stream as a file would hold it, so tests/data/*.trace
// are seeds as they are.
//
// Contracts checked:
//   - reading stops with ok or DataLoss naming the source, never a crash;
//   - no meta record is returned and every record has a kind;
//   - what was read packs (after a meta record) into a stream that reads
//     back completely, with no error, to records that pack to the same bytes;
//   - the records read before an error are exactly those a read of the
//     stream cut at that point gives.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/trace/trace.h"
#include "fuzz_util.h"

namespace dmlps::fuzz {
namespace {

constexpr std::string_view kSource = "fuzz-input";

std::string PackAll(const std::vector<trace::Record>& records) {
  msgpack::sbuffer buffer;
  for (const trace::Record& r : records) trace::Pack(r, &buffer);
  return std::string(buffer.data(), buffer.size());
}

// The byte offset a DataLoss message names: "... at byte offset N; ...".
bool ErrorOffset(const std::string& message, size_t* offset) {
  const std::string_view marker = " at byte offset ";
  const size_t at = message.find(marker);
  if (at == std::string::npos) return false;
  *offset = std::stoull(message.substr(at + marker.size()));
  return true;
}

int FuzzTrace(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const trace::ReadResult read = trace::ParseTrace(bytes, kSource);
  if (!read.status.ok()) {
    FUZZ_CHECK(read.status.code() == StatusCode::kDataLoss);
    FUZZ_CHECK(read.status.message().starts_with(std::string(kSource) + ": "));
  }
  for (const trace::Record& r : read.records) FUZZ_CHECK(!r.kind.empty() && r.kind != "meta");

  // A record the reader returned is one it reads back, unchanged.
  msgpack::sbuffer meta;
  trace::Pack(trace::MetaRecord(0, "fuzz"), &meta);
  const std::string packed = PackAll(read.records);
  const std::string stream = std::string(meta.data(), meta.size()) + packed;
  const trace::ReadResult again = trace::ParseTrace(stream, kSource);
  FUZZ_CHECK(again.status.ok());
  FUZZ_CHECK(again.records.size() == read.records.size());
  FUZZ_CHECK(PackAll(again.records) == packed);

  // Reading stopped at a record boundary: the stream up to it reads cleanly
  // to the same records.
  size_t offset = 0;
  if (!read.status.ok() && ErrorOffset(read.status.message(), &offset)) {
    FUZZ_CHECK(offset < size);
    const trace::ReadResult prefix = trace::ParseTrace(bytes.substr(0, offset), kSource);
    FUZZ_CHECK(prefix.status.ok());
    FUZZ_CHECK(PackAll(prefix.records) == packed);
  }
  return 0;
}

}  // namespace
}  // namespace dmlps::fuzz

DMLPS_FUZZ_TARGET(FuzzTrace)
