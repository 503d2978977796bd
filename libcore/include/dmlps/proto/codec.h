// Turning messages into ZeroMQ frames and back. Nothing from the wire is
// trusted: every length, type and value is checked before use.
#ifndef DMLPS_PROTO_CODEC_H_
#define DMLPS_PROTO_CODEC_H_

#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>
#include <zmq.hpp>

#include "dmlps/base/status.h"
#include "dmlps/proto/messages.h"

namespace dmlps::proto {

// Large tensors travel as several frames of at most this many bytes, so that
// ZeroMQ pipelines them instead of holding one huge buffer.
inline constexpr int64_t kDefaultChunkBytes = 4 << 20;

// A decoded message: its header body and its raw payload frames.
struct Message {
  Body body;
  std::vector<zmq::message_t> payload;
};

// Encodes the header frame [kProtocolVersion, type, body-map].
zmq::message_t EncodeHeader(const Body& body);

// Decodes a header frame. Protocol error, with the reason, when the bytes are
// not one msgpack value, carry another protocol version, an unknown type, or
// fields of the wrong type.
Result<Body> DecodeHeader(const void* data, size_t size);

// Decodes frames[first] as the header and moves the frames after it into
// the payload.
Result<Message> DecodeMessage(std::vector<zmq::message_t>& frames, size_t first);

// Appends `values` to `frames` cut into frames of at most `chunk_bytes`
// (rounded down to whole floats), without copying: each frame holds a
// reference to `values` until ZeroMQ has sent it.
void AppendTensor(std::shared_ptr<const std::vector<float>> values, int64_t chunk_bytes,
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

}  // namespace dmlps::proto

#endif  // DMLPS_PROTO_CODEC_H_
