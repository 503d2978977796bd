#include "dmlps/proto/codec.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstring>
#include <exception>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "dmlps/base/msgpack_double.h"
#include "dmlps/base/printable.h"

namespace dmlps::proto {
namespace {

static_assert(std::variant_size_v<Body> == static_cast<size_t>(MsgType::kEvaluation),
              "Body lists one alternative per message type, in MsgType order");
static_assert(std::endian::native == std::endian::little,
              "payload frames are little-endian float32 viewed in place");

// Headers are small; a hostile peer must not make us allocate much to parse
// one. Arrays may hold a layout's tensors (depth 5: header, body, layout,
// tensor, shape); kMaxHeaderBytes bounds the objects of all of them.
msgpack::unpack_limit HeaderLimits() {
  return msgpack::unpack_limit(/*array=*/model::kMaxLayoutTensors, /*map=*/32, /*str=*/4096,
                               /*bin=*/0, /*ext=*/0, /*depth=*/5);
}

// What a peer's Hello names itself by is logged and kept in the run's
// report: a host, an address or a tensor name holding a control character
// (a newline that would start a forged log line of the server's) is refused.
Status CheckHelloText(const Hello& hello) {
  const char* field = HasControlCharacters(hello.host)      ? "host"
                      : HasControlCharacters(hello.address) ? "address"
                                                            : nullptr;
  for (const model::TensorSpec& t : hello.layout) {
    if (field == nullptr && HasControlCharacters(t.name)) field = "layout's tensor name";
  }
  if (field == nullptr) return Status::Ok();
  return Status::Protocol(std::string("a Hello whose ") + field + " has control characters");
}

template <typename T>
Result<Body> ConvertBody(const msgpack::object& obj) {
  T body;
  obj.convert(body);
  if constexpr (std::is_same_v<T, Hello>) DMLPS_RETURN_IF_ERROR(CheckHelloText(body));
  return Body(std::move(body));
}

// One converter per alternative of Body, in MsgType order: type k at k - 1.
template <size_t... I>
constexpr auto MakeConverters(std::index_sequence<I...>) {
  return std::array<Result<Body> (*)(const msgpack::object&), sizeof...(I)>{
      &ConvertBody<std::variant_alternative_t<I, Body>>...};
}
constexpr auto kConverters = MakeConverters(std::make_index_sequence<std::variant_size_v<Body>>());

Result<Body> ConvertByType(MsgType type, const msgpack::object& obj) {
  const auto k = static_cast<size_t>(type);
  if (k >= 1 && k <= kConverters.size()) return kConverters[k - 1](obj);
  return Status::Protocol("unknown message type " + std::to_string(static_cast<int>(type)));
}

// The names of the message types, in MsgType order: type k at k - 1.
constexpr std::array<std::string_view, std::variant_size_v<Body>> kTypeNames = {
    "Hello",    "Welcome", "Pull",  "Model",  "Push",  "Stop",     "Heartbeat", "Error",
    "Continue", "SyncNow", "Chunk", "Orders", "Slice", "Evaluate", "Evaluation"};

// x * 0 is 0 for every finite x and NaN for NaN and ±infinity, so the sum
// is 0 exactly when all are finite. Eigen vectorizes the sum: four times as
// fast as allFinite(), which matters on 64 MB gradients. (Needs IEEE
// arithmetic: no -ffast-math.)
bool AllFiniteValues(const Eigen::Map<const Eigen::VectorXf>& values) {
  return (values * 0.f).sum() == 0.f;
}

// The reference a zero-copy frame holds on its tensor. ZeroMQ hands the
// frame to its I/O thread, which calls ReleaseTensor, through lock-free pipes
// inside libzmq; the release store here and the acquire load there make that
// hand-over visible to ThreadSanitizer, which does not see into libzmq.
struct TensorHold {
  explicit TensorHold(std::shared_ptr<const std::vector<float>> v) : values(std::move(v)) {
    published.store(true, std::memory_order_release);
  }
  std::shared_ptr<const std::vector<float>> values;
  std::atomic<bool> published{false};
};

void ReleaseTensor(void* /*data*/, void* hint) {
  auto* hold = static_cast<TensorHold*>(hint);
  (void)hold->published.load(std::memory_order_acquire);
  delete hold;
}

}  // namespace

std::string_view MsgTypeName(MsgType type) {
  const auto k = static_cast<size_t>(type);
  return k >= 1 && k <= kTypeNames.size() ? kTypeNames[k - 1] : "unknown";
}

MsgType TypeOf(const Body& body) {
  // The variant's alternatives are declared in MsgType order, starting at 1.
  return static_cast<MsgType>(body.index() + 1);
}

zmq::message_t EncodeHeader(const Body& body) {
  PackBuffer buffer;
  msgpack::packer<PackBuffer> packer(buffer);
  packer.pack_array(3);
  packer.pack(kProtocolVersion);
  packer.pack(static_cast<uint32_t>(TypeOf(body)));
  std::visit([&](const auto& b) { packer.pack(b); }, body);
  return zmq::message_t(buffer.data(), buffer.size());
}

Result<Body> DecodeHeader(const void* data, size_t size) {
  if (size == 0) return Status::Protocol("empty header frame");
  if (size > static_cast<size_t>(kMaxHeaderBytes)) {
    return Status::Protocol("header of " + std::to_string(size) + " bytes (at most " +
                            std::to_string(kMaxHeaderBytes) + ")");
  }
  try {
    size_t offset = 0;
    msgpack::object_handle handle = msgpack::unpack(static_cast<const char*>(data), size, offset,
                                                    nullptr, nullptr, HeaderLimits());
    if (offset != size) {
      return Status::Protocol("header has " + std::to_string(size - offset) + " trailing bytes");
    }
    const msgpack::object& obj = handle.get();
    if (obj.type != msgpack::type::ARRAY || obj.via.array.size != 3) {
      return Status::Protocol("header is not a [version, type, body] array");
    }
    const msgpack::object* items = obj.via.array.ptr;
    if (items[0].type != msgpack::type::POSITIVE_INTEGER) {
      return Status::Protocol("header version is not an unsigned integer");
    }
    uint64_t version = items[0].via.u64;
    if (version != kProtocolVersion) {
      return Status::Protocol("peer speaks protocol version " + std::to_string(version) +
                              ", this is version " + std::to_string(kProtocolVersion));
    }
    if (items[1].type != msgpack::type::POSITIVE_INTEGER) {
      return Status::Protocol("header type is not an unsigned integer");
    }
    uint64_t type = items[1].via.u64;
    if (type < static_cast<uint64_t>(MsgType::kHello) ||
        type > static_cast<uint64_t>(MsgType::kEvaluation)) {
      return Status::Protocol("unknown message type " + std::to_string(type));
    }
    if (items[2].type != msgpack::type::MAP) {
      return Status::Protocol("header body is not a map");
    }
    return ConvertByType(static_cast<MsgType>(type), items[2]);
  } catch (const msgpack::type_error&) {
    return Status::Protocol("header field has the wrong type");
  } catch (const std::exception& e) {
    return Status::Protocol(std::string("malformed header: ") + e.what());
  }
}

Result<Message> DecodeMessage(std::vector<zmq::message_t>& frames, size_t first) {
  if (frames.size() <= first) return Status::Protocol("message has no header frame");
  if (frames.size() - first > static_cast<size_t>(kMaxMessageFrames)) {
    return Status::Protocol("message of " + std::to_string(frames.size() - first) +
                            " frames (at most " + std::to_string(kMaxMessageFrames) + ")");
  }
  Result<Body> body = DecodeHeader(frames[first].data(), frames[first].size());
  if (!body.ok()) return body.status();
  Message message{std::move(body).value(), {}};
  message.payload.reserve(frames.size() - first - 1);
  for (size_t i = first + 1; i < frames.size(); ++i)
    message.payload.push_back(std::move(frames[i]));
  return message;
}

void AppendTensor(std::shared_ptr<const std::vector<float>> values, int64_t chunk_bytes,
                  std::vector<zmq::message_t>* frames) {
  const int64_t per_frame = std::max<int64_t>(1, chunk_bytes / static_cast<int64_t>(sizeof(float)));
  const int64_t total = static_cast<int64_t>(values->size());
  for (int64_t offset = 0; offset < total; offset += per_frame) {
    const int64_t n = std::min(per_frame, total - offset);
    // ZeroMQ frees each frame separately, so each holds its own reference.
    auto* hint = new TensorHold(values);
    void* data = const_cast<float*>(values->data() + offset);
    frames->emplace_back(data, static_cast<size_t>(n) * sizeof(float), &ReleaseTensor, hint);
  }
}

void AppendRange(std::shared_ptr<const std::vector<float>> values, int64_t offset, int64_t count,
                 std::vector<zmq::message_t>* frames) {
  void* data = const_cast<float*>(values->data() + offset);
  auto* hint = new TensorHold(std::move(values));
  frames->emplace_back(data, static_cast<size_t>(count) * sizeof(float), &ReleaseTensor, hint);
}

int64_t ChunkBytesFor(int64_t payload_bytes) {
  if (payload_bytes <= kDefaultChunkBytes) return kDefaultChunkBytes;
  constexpr int64_t kPage = 4096;
  const int64_t sixteenth = (payload_bytes / kMinChunksPerPayload + kPage - 1) / kPage * kPage;
  return std::clamp(sixteenth, kMinChunkBytes, kDefaultChunkBytes);
}

ChunkLayout ChunkLayout::ForBytes(int64_t size, int64_t chunk_bytes) {
  const int64_t floats = chunk_bytes / static_cast<int64_t>(sizeof(float));
  return ChunkLayout{std::max<int64_t>(size, 0), std::clamp<int64_t>(floats, 1, kMaxChunkFloats)};
}

Result<ChunkLayout> ChunkLayout::FromHeader(int64_t size, int64_t chunks, int64_t chunk_floats) {
  if (size <= 0) {
    return Status::Protocol("a streamed payload of " + std::to_string(size) + " floats");
  }
  if (chunk_floats < 1 || chunk_floats > kMaxChunkFloats) {
    return Status::Protocol("chunks of " + std::to_string(chunk_floats) + " floats (1 to " +
                            std::to_string(kMaxChunkFloats) + " allowed)");
  }
  ChunkLayout layout{size, chunk_floats};
  if (layout.count() > kMaxChunks) {
    return Status::Protocol(std::to_string(layout.count()) + " chunks (at most " +
                            std::to_string(kMaxChunks) + " allowed)");
  }
  if (chunks != layout.count()) {
    return Status::Protocol(
        std::to_string(size) + " floats in chunks of " + std::to_string(chunk_floats) + " make " +
        std::to_string(layout.count()) + " chunks, not " + std::to_string(chunks));
  }
  return layout;
}

Result<IncomingTensor> IncomingTensor::Open(int64_t size, int64_t chunks, int64_t chunk_floats,
                                            std::vector<zmq::message_t> frames) {
  IncomingTensor tensor;
  if (chunks < 0) return Status::Protocol("a negative chunk count");
  if (chunks > 0) {
    DMLPS_ASSIGN_OR_RETURN(tensor.layout_, ChunkLayout::FromHeader(size, chunks, chunk_floats));
    if (!frames.empty()) {
      return Status::Protocol("a streamed payload's header carries " +
                              std::to_string(frames.size()) + " payload frames");
    }
    tensor.size_ = size;
    tensor.chunks_ = chunks;
    return tensor;
  }
  if (size < 0) return Status::Protocol("negative tensor size");
  tensor.size_ = size;
  tensor.layout_ = ChunkLayout{size, std::max<int64_t>(size, 1)};
  for (size_t i = 0; i < frames.size(); ++i) {
    Status taken = tensor.Take(std::move(frames[i]), -1);
    if (!taken.ok()) return taken.WithContext("payload frame " + std::to_string(i));
  }
  if (tensor.received_ != size) {
    return Status::Protocol("payload holds " + std::to_string(tensor.received_) +
                            " floats, expected " + std::to_string(size));
  }
  return tensor;
}

Status IncomingTensor::Take(zmq::message_t frame, int64_t expected_floats) {
  const size_t bytes = frame.size();
  if (bytes == 0 || bytes % sizeof(float) != 0) {
    return Status::Protocol(std::to_string(bytes) + " bytes, not a whole number of floats");
  }
  const int64_t n = static_cast<int64_t>(bytes / sizeof(float));
  if (expected_floats >= 0 && n != expected_floats) {
    return Status::Protocol(std::to_string(n) + " floats, expected " +
                            std::to_string(expected_floats));
  }
  if (n > size_ - received_) {
    return Status::Protocol("payload holds more than the " + std::to_string(size_) +
                            " floats its header announces");
  }
  Piece piece{received_, n, frames_.size(), {}, false};
  if (reinterpret_cast<uintptr_t>(frame.data()) % alignof(float) != 0) {
    piece.copy.resize(static_cast<size_t>(n));
    std::memcpy(piece.copy.data(), frame.data(), bytes);
  }
  frames_.push_back(std::move(frame));
  pieces_.push_back(std::move(piece));
  received_ += n;
  return Status::Ok();
}

Status IncomingTensor::Add(int64_t index, std::vector<zmq::message_t>& frames) {
  if (!streamed()) return Status::Protocol("a Chunk for a payload that came whole");
  if (complete()) {
    return Status::Protocol("chunk " + std::to_string(index) + " after all " +
                            std::to_string(chunks_) + " chunks arrived");
  }
  if (index != next_index_) {
    return Status::Protocol("chunk " + std::to_string(index) + " arrived, expected chunk " +
                            std::to_string(next_index_) + " of " + std::to_string(chunks_));
  }
  if (frames.size() != 1) {
    return Status::Protocol("chunk " + std::to_string(index) + " has " +
                            std::to_string(frames.size()) + " payload frames, not 1");
  }
  Status taken = Take(std::move(frames[0]), layout_.end(index) - layout_.begin(index));
  if (!taken.ok()) return taken.WithContext("chunk " + std::to_string(index));
  ++next_index_;
  return Status::Ok();
}

void IncomingTensor::Exclude(int64_t begin, int64_t end) {
  for (Piece& p : pieces_) {
    if (p.offset < end && p.offset + p.size > begin) p.excluded = true;
  }
}

void IncomingTensor::Release(int64_t begin, int64_t end) {
  for (Piece& p : pieces_) {
    if (p.excluded || p.offset < begin || p.offset + p.size > end) continue;
    p.excluded = true;
    frames_[p.frame].rebuild();  // frees the frame's memory now
    std::vector<float>().swap(p.copy);
  }
}

bool IncomingTensor::AllFinite(int64_t begin, int64_t end) const {
  end = std::min(end, received_);
  for (const Piece& p : pieces_) {
    const int64_t from = std::max(begin, p.offset);
    const int64_t to = std::min(end, p.offset + p.size);
    if (from >= to || p.excluded) continue;
    if (!AllFiniteValues(ConstMap(Data(p) + (from - p.offset), to - from))) return false;
  }
  return true;
}

void IncomingTensor::CopyTo(int64_t begin, int64_t end, std::span<float> out) const {
  end = std::min(end, received_);
  for (const Piece& p : pieces_) {
    const int64_t from = std::max(begin, p.offset);
    const int64_t to = std::min(end, p.offset + p.size);
    if (from >= to || p.excluded) continue;
    std::memcpy(out.data() + from, Data(p) + (from - p.offset),
                static_cast<size_t>(to - from) * sizeof(float));
  }
}

Result<TensorView> TensorView::Make(std::span<const zmq::message_t> frames, int64_t count) {
  if (count < 0) return Status::Protocol("negative tensor size");
  TensorView view;
  int64_t offset = 0;
  for (size_t i = 0; i < frames.size(); ++i) {
    const size_t bytes = frames[i].size();
    if (bytes == 0 || bytes % sizeof(float) != 0) {
      return Status::Protocol("payload frame " + std::to_string(i) + " has " +
                              std::to_string(bytes) + " bytes, not a whole number of floats");
    }
    const int64_t n = static_cast<int64_t>(bytes / sizeof(float));
    if (n > count - offset) {
      return Status::Protocol("payload holds more than the " + std::to_string(count) +
                              " floats its header announces");
    }
    const void* data = frames[i].data();
    if (reinterpret_cast<uintptr_t>(data) % alignof(float) != 0) {
      std::vector<float>& copy = view.realigned_.emplace_back(n);
      std::memcpy(copy.data(), data, bytes);
      data = copy.data();
    }
    view.chunks_.push_back({static_cast<const float*>(data), n, offset});
    offset += n;
  }
  if (offset != count) {
    return Status::Protocol("payload holds " + std::to_string(offset) + " floats, expected " +
                            std::to_string(count));
  }
  view.size_ = count;
  return view;
}

bool TensorView::AllFinite() const {
  for (const Chunk& c : chunks_) {
    if (!AllFiniteValues(ConstMap(c.data, c.size))) return false;
  }
  return true;
}

void TensorView::CopyTo(std::span<float> out) const {
  for (const Chunk& c : chunks_) {
    std::memcpy(out.data() + c.offset, c.data, static_cast<size_t>(c.size) * sizeof(float));
  }
}

}  // namespace dmlps::proto
