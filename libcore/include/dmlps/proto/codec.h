// Turning messages into ZeroMQ frames and back. Nothing from the wire is
// trusted: every length, type and value is checked before use.
#ifndef DMLPS_PROTO_CODEC_H_
#define DMLPS_PROTO_CODEC_H_

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>
#include <zmq.hpp>

#include "dmlps/base/status.h"
#include "dmlps/proto/messages.h"

namespace dmlps::proto {

// A tensor larger than this many bytes is streamed, each chunk a message of
// its own, so that the receiver works on one chunk while the next is on the
// wire; it is also the largest chunk: small enough that the server's work on
// a chunk overlaps the transfer of the next, large enough that the messages'
// own cost stays small (docs/transport.md, "Chunks sized to the payload").
inline constexpr int64_t kDefaultChunkBytes = 1 << 20;
// The smallest chunk of a streamed payload, and the fewest chunks one is cut
// into while its chunks stay above that size: the work on the last chunk,
// which nothing overlaps, is then at most a sixteenth of the payload's.
inline constexpr int64_t kMinChunkBytes = 256 << 10;
inline constexpr int64_t kMinChunksPerPayload = 16;

// The chunk size dmlps sends a payload of `payload_bytes` with: whole up to
// kDefaultChunkBytes; above, a sixteenth of it rounded up to 4 KiB, at least
// kMinChunkBytes and at most kDefaultChunkBytes (4 MiB: 16 chunks of
// 256 KiB; 64 MiB: 64 of 1 MiB).
int64_t ChunkBytesFor(int64_t payload_bytes);
// The most floats one chunk may announce: the largest frame a peer accepts.
inline constexpr int64_t kMaxChunkFloats =
    (int64_t{256} << 20) / static_cast<int64_t>(sizeof(float));
// The most chunks one payload may announce, so that a peer cannot make the
// receiver handle millions of tiny messages for one tensor.
inline constexpr int64_t kMaxChunks = int64_t{1} << 16;
// The largest header frame accepted: headers are a few hundred bytes.
inline constexpr int64_t kMaxHeaderBytes = int64_t{64} << 10;
// The most frames one message may have, its header included: dmlps sends
// at most a header and a payload frame, so thousands of tiny frames are an
// attack on the receiver's bookkeeping, not a tensor.
inline constexpr int64_t kMaxMessageFrames = 1024;

// How a payload of `size` floats is cut into chunks: each holds chunk_floats
// floats, the last one the rest.
struct ChunkLayout {
  int64_t size = 0;
  int64_t chunk_floats = 1;

  // Chunks of at most `chunk_bytes` (rounded down to whole floats, at least
  // one float and at most kMaxChunkFloats).
  static ChunkLayout ForBytes(int64_t size, int64_t chunk_bytes);
  // The layout a streamed Push or Model announces. Protocol error unless
  // size > 0, 1 <= chunk_floats <= kMaxChunkFloats, and chunks is the count
  // those give, at most kMaxChunks.
  static Result<ChunkLayout> FromHeader(int64_t size, int64_t chunks, int64_t chunk_floats);

  int64_t count() const {
    return size <= 0 ? 0 : size / chunk_floats + (size % chunk_floats != 0 ? 1 : 0);
  }
  // More than one chunk: the payload travels as Chunk messages.
  bool streamed() const { return count() > 1; }
  // Where chunk `index` starts and ends. REQUIRES: 0 <= index < count().
  int64_t begin(int64_t index) const { return index * chunk_floats; }
  int64_t end(int64_t index) const {
    return begin(index) + std::min(chunk_floats, size - begin(index));
  }
};

// A decoded message: its header body and its raw payload frames.
struct Message {
  Body body;
  std::vector<zmq::message_t> payload;
};

// Encodes the header frame [kProtocolVersion, type, body-map].
zmq::message_t EncodeHeader(const Body& body);

// Decodes a header frame. Protocol error, with the reason, when the bytes are
// not one msgpack value, carry another protocol version, an unknown type, or
// fields of the wrong type, or are more than kMaxHeaderBytes.
Result<Body> DecodeHeader(const void* data, size_t size);

// Decodes frames[first] as the header and moves the frames after it into
// the payload. Protocol error also for more than kMaxMessageFrames frames.
Result<Message> DecodeMessage(std::vector<zmq::message_t>& frames, size_t first);

// Appends `values` to `frames` cut into frames of at most `chunk_bytes`
// (rounded down to whole floats), without copying: each frame holds a
// reference to `values` until ZeroMQ has sent it.
void AppendTensor(std::shared_ptr<const std::vector<float>> values, int64_t chunk_bytes,
                  std::vector<zmq::message_t>* frames);

// Appends one frame holding values[offset, offset + count), without copying.
// REQUIRES: the range lies inside `values` and count > 0.
void AppendRange(std::shared_ptr<const std::vector<float>> values, int64_t offset, int64_t count,
                 std::vector<zmq::message_t>* frames);

// A read-only float tensor spread over payload frames, viewed in place.
class TensorView {
 public:
  using ConstMap = Eigen::Map<const Eigen::VectorXf>;

  // Checks that `frames` hold exactly `count` floats, each frame a non-empty
  // whole number of floats. A frame that is not float-aligned in memory is
  // copied once; all others are viewed without copying.
  static Result<TensorView> Make(std::span<const zmq::message_t> frames, int64_t count);

  int64_t size() const { return size_; }

  // Calls fn(offset, map) for each frame's floats in order.
  template <typename Fn>
  void ForEachChunk(Fn&& fn) const {
    for (const Chunk& c : chunks_) fn(c.offset, ConstMap(c.data, c.size));
  }

  // True when no value is NaN or infinite.
  bool AllFinite() const;
  // Copies the whole tensor into `out`. REQUIRES: out.size() == size().
  void CopyTo(std::span<float> out) const;

 private:
  struct Chunk {
    const float* data;
    int64_t size;
    int64_t offset;
  };
  std::vector<Chunk> chunks_;
  std::vector<std::vector<float>> realigned_;
  int64_t size_ = 0;
};

// A tensor payload as it arrives: whole, in the frames after its header
// (inline), or chunk by chunk in Chunk messages, in index order (streamed).
// Keeps the frames and views them in place; every frame is checked before it
// is taken, so what it holds is always a well-formed prefix of the tensor.
class IncomingTensor {
 public:
  using ConstMap = Eigen::Map<const Eigen::VectorXf>;

  // Opens the payload a Push or Model announces. chunks == 0: `frames` must
  // hold exactly `size` floats, each frame a non-empty whole number of
  // floats. chunks > 0: the layout must be valid (ChunkLayout::FromHeader)
  // and `frames` empty; the chunks come with Add. Protocol error otherwise.
  static Result<IncomingTensor> Open(int64_t size, int64_t chunks, int64_t chunk_floats,
                                     std::vector<zmq::message_t> frames);

  // Takes the next chunk of a streamed payload from a Chunk message's
  // payload. Protocol error, and nothing taken, when the payload is
  // complete, `index` is not the next one, or `frames` is not one frame of
  // exactly that chunk's floats.
  Status Add(int64_t index, std::vector<zmq::message_t>& frames);

  int64_t size() const { return size_; }
  // Floats received so far: [0, received()) is here.
  int64_t received() const { return received_; }
  bool complete() const { return received_ == size_; }
  bool streamed() const { return chunks_ > 0; }
  // Announced chunks (0: inline) and the index Add expects next.
  int64_t chunks() const { return chunks_; }
  int64_t next_index() const { return next_index_; }
  const ChunkLayout& layout() const { return layout_; }

  // Marks the received frames that overlap [begin, end) as left out:
  // ForEachIn skips them from now on (the server leaves out a chunk that
  // holds NaN or infinity).
  void Exclude(int64_t begin, int64_t end);
  // Frees the received frames that lie wholly inside [begin, end), once
  // their values are used (copied, summed), so that a large payload never
  // holds much memory at once. Their values count as left out from then on.
  void Release(int64_t begin, int64_t end);
  // No more chunks will come (the sender went away or broke off): the
  // missing part counts as left out. Closed or complete: nothing to wait for.
  void Close() { closed_ = true; }
  bool settled() const { return closed_ || complete(); }

  // Calls fn(offset, map) over the received floats in [begin, end) that are
  // not left out, in order. REQUIRES: 0 <= begin <= end.
  template <typename Fn>
  void ForEachIn(int64_t begin, int64_t end, Fn&& fn) const {
    end = std::min(end, received_);
    auto it = std::upper_bound(pieces_.begin(), pieces_.end(), begin,
                               [](int64_t at, const Piece& p) { return at < p.offset + p.size; });
    for (; it != pieces_.end() && it->offset < end; ++it) {
      if (it->excluded) continue;
      const int64_t from = std::max(begin, it->offset);
      const int64_t to = std::min(end, it->offset + it->size);
      if (from >= to) continue;  // an empty range inside a piece: nothing to show
      fn(from, ConstMap(Data(*it) + (from - it->offset), to - from));
    }
  }
  // True when no received value in [begin, end) that is not left out is
  // NaN or infinite.
  bool AllFinite(int64_t begin, int64_t end) const;
  // Copies the received floats of [begin, end) that are not left out to the
  // same places of `out`, which holds the whole tensor.
  // REQUIRES: out.size() == size().
  void CopyTo(int64_t begin, int64_t end, std::span<float> out) const;

 private:
  struct Piece {
    int64_t offset;
    int64_t size;
    size_t frame;             // in frames_
    std::vector<float> copy;  // the values, when the frame is not float-aligned
    bool excluded = false;    // left out, or released
  };
  Status Take(zmq::message_t frame, int64_t expected_floats);
  const float* Data(const Piece& p) const {
    return p.copy.empty() ? static_cast<const float*>(frames_[p.frame].data()) : p.copy.data();
  }

  int64_t size_ = 0;
  int64_t received_ = 0;
  int64_t chunks_ = 0;
  int64_t next_index_ = 0;
  bool closed_ = false;
  ChunkLayout layout_;
  std::deque<zmq::message_t> frames_;  // a deque: taking a frame never moves the others
  std::vector<Piece> pieces_;
};

}  // namespace dmlps::proto

#endif  // DMLPS_PROTO_CODEC_H_
