// libFuzzer target for a server's intake of streamed pushes
// (server/intake.h): the input is cut into messages of ZeroMQ frames (see
// ParseFraming in fuzz_util.h) as one peer would send them, Pushes opened
// with OpenPush and followed by PushStreams, Chunks taken in, in any order,
// partial streams left open, replaced or closed; a Heartbeat's time_us picks
// the worker the next messages come from (bits 0-1) and, with bit 2, closes
// that worker's stream.
//
// Contracts checked, each from the header's words:
//   - OpenPush gives a tensor exactly with kNone and kNonFinite, a reason
//     exactly with a fault, and never takes more floats than it holds;
//   - Take answers kNoStream (with a reason) exactly when the worker has no
//     stream; kTaken says nothing more; kBroken keeps the stream open with a
//     Protocol error; a stream ends (no longer open) with its last chunk;
//   - the clock a chunk is taken under is the clock its stream was followed at;
//   - Close says whether there was a stream, and none is open after it.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <variant>
#include <vector>

#include "dmlps/proto/codec.h"
#include "fuzz_util.h"
#include "server/intake.h"

namespace dmlps::fuzz {
namespace {

using server::OpenedPush;
using server::PushStreams;

struct State {
  PushStreams streams;
  std::map<int64_t, int64_t> clocks;  // the clock each open stream was followed at
  std::map<int64_t, std::shared_ptr<proto::IncomingTensor>> tensors;
  int64_t worker = 0;
  // Floats the receiver holds: those of the first push when there are at
  // most 65536 of them (a seed's pushes then fit), else 1 + options.
  int64_t size = 0;
  int64_t fallback_size = 1;
};

void HandlePush(const proto::Push& push, net::Frames& payload, State* s) {
  if (s->size == 0) {
    s->size = push.num_params >= 1 && push.num_params <= 65536 ? push.num_params : s->fallback_size;
  }
  OpenedPush opened = server::OpenPush(push, s->size, "the model", payload);
  const bool has_tensor =
      opened.fault == OpenedPush::kNone || opened.fault == OpenedPush::kNonFinite;
  FUZZ_CHECK((opened.tensor != nullptr) == has_tensor);
  FUZZ_CHECK(opened.why.empty() == (opened.fault == OpenedPush::kNone));
  if (!has_tensor) return;
  FUZZ_CHECK(opened.tensor->size() == s->size);
  FUZZ_CHECK(opened.tensor->received() <= opened.tensor->size());
  // A server closes the stream a worker had before following its next push.
  FUZZ_CHECK(s->streams.Close(s->worker) == (s->clocks.count(s->worker) != 0));
  s->clocks.erase(s->worker);
  s->tensors.erase(s->worker);
  const bool streamed = !opened.tensor->complete();
  s->streams.Follow(s->worker, opened.tensor, push.clock);
  FUZZ_CHECK(s->streams.open(s->worker) == streamed);
  if (streamed) {
    s->clocks[s->worker] = push.clock;
    s->tensors[s->worker] = opened.tensor;
    FUZZ_CHECK(s->streams.clock(s->worker) == push.clock);
  }
}

void HandleChunk(const proto::Chunk& chunk, net::Frames& payload, State* s) {
  const bool had = s->streams.open(s->worker);
  FUZZ_CHECK(had == (s->clocks.count(s->worker) != 0));
  const PushStreams::Taken taken = s->streams.Take(s->worker, chunk.index, payload);
  if (!had) {
    FUZZ_CHECK(taken.verdict == PushStreams::Verdict::kNoStream);
    FUZZ_CHECK(!taken.why.empty());
    return;
  }
  FUZZ_CHECK(taken.verdict != PushStreams::Verdict::kNoStream);
  FUZZ_CHECK(taken.clock == s->clocks[s->worker]);
  const auto& tensor = s->tensors[s->worker];
  FUZZ_CHECK(tensor->received() <= tensor->size());
  switch (taken.verdict) {
    case PushStreams::Verdict::kTaken:
      FUZZ_CHECK(taken.why.empty());
      break;
    case PushStreams::Verdict::kBroken:
      FUZZ_CHECK(taken.error.code() == StatusCode::kProtocol);
      FUZZ_CHECK(s->streams.open(s->worker));
      return;
    default:
      FUZZ_CHECK(!taken.why.empty());
      break;
  }
  FUZZ_CHECK(s->streams.open(s->worker) == !tensor->complete());
  if (tensor->complete()) {
    s->clocks.erase(s->worker);
    s->tensors.erase(s->worker);
  }
}

int FuzzIntake(const uint8_t* data, size_t size) {
  const FramedInput in = ParseFraming(data, size);
  State s;
  s.fallback_size = 1 + in.options;
  for (const auto& layout : in.messages) {
    net::Frames frames;
    for (const FramedInput::Frame& f : layout) {
      frames.emplace_back(static_cast<const void*>(data + f.offset), f.size);
    }
    Result<proto::Message> message = proto::DecodeMessage(frames, 0);
    if (!message.ok()) continue;
    if (const auto* push = std::get_if<proto::Push>(&message->body)) {
      HandlePush(*push, message->payload, &s);
    } else if (const auto* chunk = std::get_if<proto::Chunk>(&message->body)) {
      HandleChunk(*chunk, message->payload, &s);
    } else if (const auto* heartbeat = std::get_if<proto::Heartbeat>(&message->body)) {
      s.worker = heartbeat->time_us & 3;
      if ((heartbeat->time_us & 4) != 0) {
        FUZZ_CHECK(s.streams.Close(s.worker) == (s.clocks.count(s.worker) != 0));
        FUZZ_CHECK(!s.streams.open(s.worker));
        s.clocks.erase(s.worker);
        s.tensors.erase(s.worker);
      }
    }
  }
  FUZZ_CHECK(s.streams.any_open() == !s.clocks.empty());
  return 0;
}

}  // namespace
}  // namespace dmlps::fuzz

DMLPS_FUZZ_TARGET(FuzzIntake)
