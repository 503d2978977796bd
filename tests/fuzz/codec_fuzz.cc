// libFuzzer target for the wire decoder (dmlps/proto/codec.h): the input is
// cut into messages of ZeroMQ frames (see ParseFraming in fuzz_util.h), each
// decoded as a peer's message would be, and each decoded payload checked
// with TensorView and IncomingTensor, chunks of streamed payloads included.
//
// Contracts checked, each against an oracle written here from the header's
// words, not from the implementation:
//   - DecodeMessage fails (Protocol) when the header frame is missing; when it
//     succeeds, the payload is the frames after the header, byte for byte;
//   - a decoded body re-encodes to a header that decodes to the same type and
//     re-encodes to the same bytes;
//   - TensorView::Make succeeds exactly when every frame is a non-empty whole
//     number of floats and they add up to the count, and then views exactly
//     those bytes; AllFinite agrees with a plain scan;
//   - IncomingTensor::Open and Add succeed exactly when the header's layout
//     and the frames allow it, and a failed Add takes nothing; ForEachIn,
//     AllFinite and CopyTo show exactly the received bytes of the pieces not
//     left out (by Exclude, Release, or the server's rule of leaving out a
//     chunk that holds NaN or infinity); a Heartbeat's time_us, read as a
//     command, picks the ranges to exclude or release, or closes the stream.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "dmlps/proto/codec.h"
#include "fuzz_util.h"

namespace dmlps::fuzz {
namespace {

using proto::IncomingTensor;
using proto::Message;
using proto::TensorView;

std::string_view Bytes(const zmq::message_t& frame) {
  return std::string_view(static_cast<const char*>(frame.data()), frame.size());
}

bool AllFiniteBytes(std::string_view bytes) {
  for (size_t at = 0; at + sizeof(float) <= bytes.size(); at += sizeof(float)) {
    float value = 0;
    std::memcpy(&value, bytes.data() + at, sizeof value);
    if (!std::isfinite(value)) return false;
  }
  return true;
}

// True when every frame is a non-empty whole number of floats; `*floats`
// gets their total.
bool WholeFloats(const std::vector<zmq::message_t>& frames, int64_t* floats) {
  *floats = 0;
  bool whole = true;
  for (const zmq::message_t& f : frames) {
    if (f.size() == 0 || f.size() % sizeof(float) != 0) whole = false;
    *floats += static_cast<int64_t>(f.size() / sizeof(float));
  }
  return whole;
}

void CheckRoundTrip(const proto::Body& body) {
  const zmq::message_t once = proto::EncodeHeader(body);
  Result<proto::Body> again = proto::DecodeHeader(once.data(), once.size());
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again->index() == body.index());
  FUZZ_CHECK(proto::TypeOf(*again) == proto::TypeOf(body));
  const zmq::message_t twice = proto::EncodeHeader(*again);
  FUZZ_CHECK(Bytes(once) == Bytes(twice));
}

void CheckTensorView(const std::vector<zmq::message_t>& payload, int64_t count) {
  int64_t floats = 0;
  const bool whole = WholeFloats(payload, &floats);
  Result<TensorView> view = TensorView::Make(payload, count);
  FUZZ_CHECK(view.ok() == (count >= 0 && whole && floats == count));
  if (!view.ok()) {
    FUZZ_CHECK(view.status().code() == StatusCode::kProtocol);
    return;
  }
  std::string all;
  for (const zmq::message_t& f : payload) all.append(Bytes(f));
  FUZZ_CHECK(view->size() == count);
  int64_t next = 0;
  view->ForEachChunk([&](int64_t offset, const TensorView::ConstMap& map) {
    FUZZ_CHECK(offset == next);
    FUZZ_CHECK(map.size() > 0);
    FUZZ_CHECK(std::memcmp(map.data(), all.data() + offset * 4, map.size() * 4) == 0);
    next += map.size();
  });
  FUZZ_CHECK(next == count);
  std::vector<float> copy(static_cast<size_t>(count));
  view->CopyTo(copy);
  FUZZ_CHECK(count == 0 || std::memcmp(copy.data(), all.data(), all.size()) == 0);
  FUZZ_CHECK(view->AllFinite() == AllFiniteBytes(all));
}

// A payload being received, and a model of what it must hold: each piece
// (an inline frame or a chunk) with its bytes and whether it is left out.
struct Piece {
  int64_t offset;
  int64_t size;
  bool left_out;
};
struct Stream {
  IncomingTensor tensor;
  std::string expected;  // every byte received, left out or not
  std::vector<Piece> pieces;
  bool exclude_nonfinite = false;
};

bool PieceFinite(const Stream& s, const Piece& p, int64_t from, int64_t to) {
  return AllFiniteBytes(std::string_view(s.expected).substr(from * 4, (to - from) * 4));
}

// Over [begin, end): ForEachIn shows exactly the pieces not left out, in
// order, with the bytes received; AllFinite and CopyTo see the same.
void CheckRange(const Stream& s, int64_t begin, int64_t end) {
  const IncomingTensor& t = s.tensor;
  const int64_t stop = std::min(end, t.received());
  std::vector<std::pair<int64_t, int64_t>> want;  // [from, to) shown
  bool finite = true;
  for (const Piece& p : s.pieces) {
    const int64_t from = std::max(begin, p.offset);
    const int64_t to = std::min(stop, p.offset + p.size);
    if (from >= to || p.left_out) continue;
    want.emplace_back(from, to);
    finite = finite && PieceFinite(s, p, from, to);
  }
  size_t shown = 0;
  t.ForEachIn(begin, end, [&](int64_t offset, const IncomingTensor::ConstMap& map) {
    // An empty range inside a piece gets one call with an empty map: odd, but
    // harmless (tests/fuzz/crashes/codec-1). Any other call shows floats.
    if (begin == end && map.size() == 0) return;
    FUZZ_CHECK(shown < want.size());
    FUZZ_CHECK(offset == want[shown].first && offset + map.size() == want[shown].second);
    FUZZ_CHECK(std::memcmp(map.data(), s.expected.data() + offset * 4, map.size() * 4) == 0);
    ++shown;
  });
  FUZZ_CHECK(shown == want.size());
  FUZZ_CHECK(t.AllFinite(begin, end) == finite);
  // CopyTo writes what is shown and nothing else.
  if (t.size() <= 4096) {
    constexpr float kUntouched = -12345.5f;
    std::vector<float> out(static_cast<size_t>(t.size()), kUntouched);
    t.CopyTo(begin, end, out);
    size_t next = 0;
    for (int64_t i = 0; i < t.size(); ++i) {
      while (next < want.size() && want[next].second <= i) ++next;
      if (next < want.size() && want[next].first <= i) {
        FUZZ_CHECK(std::memcmp(&out[i], s.expected.data() + i * 4, 4) == 0);
      } else {
        FUZZ_CHECK(out[i] == kUntouched);
      }
    }
  }
}

void CheckHeld(const Stream& s) {
  const IncomingTensor& t = s.tensor;
  FUZZ_CHECK(t.received() >= 0 && t.received() <= t.size());
  FUZZ_CHECK(static_cast<int64_t>(s.expected.size()) == t.received() * 4);
  FUZZ_CHECK(t.complete() == (t.received() == t.size()));
  CheckRange(s, 0, t.received());
  if (s.exclude_nonfinite) FUZZ_CHECK(t.AllFinite(0, t.received()));
}

// Leaves out what the server would: a piece holding NaN or infinity.
void ExcludeNonfinite(Stream* s, size_t from_piece) {
  if (!s->exclude_nonfinite) return;
  for (size_t i = from_piece; i < s->pieces.size(); ++i) {
    Piece& p = s->pieces[i];
    if (PieceFinite(*s, p, p.offset, p.offset + p.size)) continue;
    s->tensor.Exclude(p.offset, p.offset + p.size);
    p.left_out = true;
  }
}

// Exclude: every piece that overlaps the range; Release: every piece that
// lies wholly inside it. A heartbeat's time_us asks for one (see Command).
void Exclude(Stream* s, int64_t begin, int64_t end) {
  s->tensor.Exclude(begin, end);
  for (Piece& p : s->pieces) {
    if (p.offset < end && p.offset + p.size > begin) p.left_out = true;
  }
}
void Release(Stream* s, int64_t begin, int64_t end) {
  s->tensor.Release(begin, end);
  for (Piece& p : s->pieces) {
    if (p.offset >= begin && p.offset + p.size <= end) p.left_out = true;
  }
}

void OpenStream(int64_t size, int64_t chunks, int64_t chunk_floats,
                std::vector<zmq::message_t> payload, bool exclude_nonfinite,
                std::optional<Stream>* stream) {
  const Result<proto::ChunkLayout> layout =
      proto::ChunkLayout::FromHeader(size, chunks, chunk_floats);
  const bool layout_ok = size > 0 && chunk_floats >= 1 && chunk_floats <= proto::kMaxChunkFloats &&
                         chunks == size / chunk_floats + (size % chunk_floats != 0 ? 1 : 0);
  FUZZ_CHECK(layout.ok() == layout_ok);
  if (layout.ok()) {
    FUZZ_CHECK(layout->count() == chunks);
    FUZZ_CHECK(layout->begin(0) == 0 && layout->end(chunks - 1) == size);
    for (int64_t i = 0; i + 1 < chunks && i < 64; ++i) {
      FUZZ_CHECK(layout->end(i) == layout->begin(i + 1));
      FUZZ_CHECK(layout->end(i) - layout->begin(i) == chunk_floats);
    }
  }

  int64_t floats = 0;
  const bool whole = WholeFloats(payload, &floats);
  bool expect_ok = false;
  if (chunks > 0) expect_ok = layout_ok && payload.empty();
  if (chunks == 0) expect_ok = size >= 0 && whole && floats == size;
  std::string sent;
  std::vector<Piece> pieces;
  for (const zmq::message_t& f : payload) {
    pieces.push_back(
        {static_cast<int64_t>(sent.size() / 4), static_cast<int64_t>(f.size() / 4), false});
    sent.append(Bytes(f));
  }

  Result<IncomingTensor> opened =
      IncomingTensor::Open(size, chunks, chunk_floats, std::move(payload));
  FUZZ_CHECK(opened.ok() == expect_ok);
  if (!opened.ok()) {
    FUZZ_CHECK(opened.status().code() == StatusCode::kProtocol);
    return;
  }
  if (stream->has_value()) {
    (*stream)->tensor.Close();
    FUZZ_CHECK((*stream)->tensor.settled());
  }
  if (chunks > 0) {
    sent.clear();
    pieces.clear();
  }
  stream->emplace(
      Stream{std::move(opened).value(), std::move(sent), std::move(pieces), exclude_nonfinite});
  Stream& s = **stream;
  FUZZ_CHECK(s.tensor.size() == size && s.tensor.chunks() == chunks);
  FUZZ_CHECK(s.tensor.next_index() == 0);
  FUZZ_CHECK(s.tensor.streamed() == (chunks > 0));
  FUZZ_CHECK(s.tensor.received() == (chunks > 0 ? 0 : size));
  ExcludeNonfinite(&s, 0);
  CheckHeld(s);
}

void AddChunk(int64_t index, std::vector<zmq::message_t>& payload, Stream* s) {
  IncomingTensor& t = s->tensor;
  const int64_t next = t.next_index();
  const int64_t received = t.received();
  bool expect_ok = t.streamed() && !t.complete() && index == next && payload.size() == 1;
  int64_t begin = 0;
  int64_t end = 0;
  if (expect_ok) {
    begin = t.layout().begin(next);
    end = t.layout().end(next);
    expect_ok = static_cast<int64_t>(payload[0].size()) == (end - begin) * 4;
  }
  const std::string sent = payload.size() == 1 ? std::string(Bytes(payload[0])) : "";

  const Status added = t.Add(index, payload);
  FUZZ_CHECK(added.ok() == expect_ok);
  if (!added.ok()) {
    FUZZ_CHECK(added.code() == StatusCode::kProtocol);
    FUZZ_CHECK(t.next_index() == next && t.received() == received);  // nothing taken
    return;
  }
  FUZZ_CHECK(t.next_index() == next + 1 && t.received() == end && begin == received);
  s->expected += sent;
  s->pieces.push_back({begin, end - begin, false});
  ExcludeNonfinite(s, s->pieces.size() - 1);
  CheckHeld(*s);
}

// A heartbeat's time_us doubles as a command on the open stream: bits 32-33
// pick nothing, Exclude, Release or Close; bits 0-15 the range's begin and
// bits 16-31 its length.
void Command(int64_t word, std::optional<Stream>* stream) {
  if (!stream->has_value()) return;
  Stream& s = **stream;
  const int64_t begin = word & 0xFFFF;
  const int64_t end = begin + ((word >> 16) & 0xFFFF);
  switch ((word >> 32) & 3) {
    case 0:
      return;
    case 1:
      Exclude(&s, begin, end);
      break;
    case 2:
      Release(&s, begin, end);
      break;
    case 3:
      s.tensor.Close();
      FUZZ_CHECK(s.tensor.settled());
      stream->reset();  // no chunk may follow a close
      return;
  }
  CheckRange(s, begin, end);
  CheckHeld(s);
}

void CheckMessage(const uint8_t* bytes, const std::vector<FramedInput::Frame>& layout, size_t first,
                  bool zero_copy, bool exclude_nonfinite, std::optional<Stream>* stream) {
  std::vector<zmq::message_t> frames;
  frames.reserve(layout.size());
  for (const FramedInput::Frame& f : layout) {
    void* at = const_cast<uint8_t*>(bytes + f.offset);
    if (zero_copy) {
      frames.emplace_back(at, f.size, nullptr, nullptr);  // a constant frame, viewed in place
    } else {
      frames.emplace_back(static_cast<const void*>(at), f.size);
    }
  }

  Result<Message> decoded = proto::DecodeMessage(frames, first);
  if (layout.size() <= first) FUZZ_CHECK(!decoded.ok());
  if (!decoded.ok()) {
    FUZZ_CHECK(decoded.status().code() == StatusCode::kProtocol);
    FUZZ_CHECK(!decoded.status().message().empty());
    return;
  }
  Message& message = decoded.value();
  FUZZ_CHECK(message.payload.size() == layout.size() - first - 1);
  for (size_t i = 0; i < message.payload.size(); ++i) {
    const FramedInput::Frame& f = layout[first + 1 + i];
    FUZZ_CHECK(Bytes(message.payload[i]) ==
               std::string_view(reinterpret_cast<const char*>(bytes) + f.offset, f.size));
  }

  CheckRoundTrip(message.body);

  int64_t payload_floats = 0;
  WholeFloats(message.payload, &payload_floats);
  if (const auto* push = std::get_if<proto::Push>(&message.body)) {
    CheckTensorView(message.payload, push->num_params);
    OpenStream(push->num_params, push->chunks, push->chunk_floats, std::move(message.payload),
               exclude_nonfinite, stream);
  } else if (const auto* model = std::get_if<proto::Model>(&message.body)) {
    CheckTensorView(message.payload, model->num_params);
    OpenStream(model->num_params, model->chunks, model->chunk_floats, std::move(message.payload),
               exclude_nonfinite, stream);
  } else if (const auto* chunk = std::get_if<proto::Chunk>(&message.body)) {
    CheckTensorView(message.payload, payload_floats);
    if (stream->has_value()) AddChunk(chunk->index, message.payload, &**stream);
  } else if (const auto* heartbeat = std::get_if<proto::Heartbeat>(&message.body)) {
    CheckTensorView(message.payload, payload_floats);
    Command(heartbeat->time_us, stream);
  } else {
    CheckTensorView(message.payload, payload_floats);
  }
}

int FuzzCodec(const uint8_t* data, size_t size) {
  const FramedInput in = ParseFraming(data, size);
  // Frames that view the input in place point into this exact-size copy, so
  // AddressSanitizer catches a read past a frame at the end of the input.
  std::unique_ptr<uint8_t[]> bytes(new uint8_t[size]);
  if (size > 0) std::memcpy(bytes.get(), data, size);
  const size_t first = in.options & 3;
  const bool zero_copy = (in.options & 4) != 0;
  const bool exclude_nonfinite = (in.options & 8) != 0;

  std::optional<Stream> stream;  // destroyed before `bytes`, which its frames may view
  for (const auto& message : in.messages) {
    CheckMessage(bytes.get(), message, first, zero_copy, exclude_nonfinite, &stream);
  }
  if (stream.has_value()) {
    CheckHeld(*stream);
    stream->tensor.Close();
    FUZZ_CHECK(stream->tensor.settled());
  }
  return 0;
}

}  // namespace
}  // namespace dmlps::fuzz

DMLPS_FUZZ_TARGET(FuzzCodec)
