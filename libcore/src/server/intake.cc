#include "server/intake.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "server/model_store.h"

namespace dmlps::server {

bool HasNegativeCounts(const proto::Push& push) {
  return push.samples < 0 || push.batch < 0 || push.compute_us < 0 || push.wait_us < 0 ||
         push.straggle_us < 0;
}

bool HasImplausibleCounts(const proto::Push& push) {
  constexpr int64_t kMaxCount = int64_t{1} << 40;
  constexpr int64_t kMaxSamples = int64_t{1} << 31;
  constexpr int64_t kMaxMicros = int64_t{1} << 50;
  auto beyond = [](int64_t v, int64_t bound) { return v > bound || v < -bound; };
  return beyond(push.clock, kMaxCount) || beyond(push.base_version, kMaxCount) ||
         beyond(push.samples, kMaxSamples) || beyond(push.batch, kMaxSamples) ||
         beyond(push.compute_us, kMaxMicros) || beyond(push.wait_us, kMaxMicros) ||
         beyond(push.straggle_us, kMaxMicros) || beyond(push.comm_us, kMaxMicros) ||
         beyond(push.memory_bytes, kMaxMicros);
}

sync::PushInfo PushInfoOf(const proto::Push& push, Clock::time_point replied_at,
                          Clock::time_point now) {
  sync::PushInfo info;
  info.clock = push.clock;  // the driver counts from where the worker joined
  info.base_version = push.base_version;
  info.samples = push.samples;
  info.batch = push.batch;
  info.busy_s = (push.compute_us + push.straggle_us) * 1e-6;
  // (A hostile push's times can be anything: waiting, never more than computing.)
  const int64_t compute_us = std::max<int64_t>(push.compute_us, 0);
  info.compute_s = static_cast<double>(compute_us) * 1e-6;
  info.run_wait_s =
      static_cast<double>(std::clamp<int64_t>(push.run_wait_us, 0, compute_us)) * 1e-6;
  info.comm_s = push.comm_us > 0 ? push.comm_us * 1e-6 : 0;
  // (A streamed push is timed to its header: its chunks are still coming.)
  if (replied_at != Clock::time_point{}) {
    info.cycle_s = std::chrono::duration<double>(now - replied_at).count();
  }
  info.cpu = std::isfinite(push.cpu) ? push.cpu : 0;
  info.memory = static_cast<double>(push.memory_bytes);
  return info;
}

namespace {

// Replaces an encoded push's payload with its decoded floats, one frame of
// `size`. Empty when it did; otherwise why not (the payload then unused).
std::string DecodePayload(const proto::Push& push, int64_t size, const compress::Codec& codec,
                          net::Frames& payload) {
  const std::string name = compress::CodecName(codec);
  if (push.encoded_bytes == 0) {
    return "push is dense; this job's pushes are encoded in " + name;
  }
  if (push.codec != name) {
    return "push is encoded in '" + push.codec + "'; this job's pushes are encoded in " + name;
  }
  if (push.chunks != 0) return "an encoded push comes inline, not in chunks";
  const size_t expected = compress::EncodedBytes(codec, static_cast<size_t>(size));
  if (push.encoded_bytes < 0 || static_cast<size_t>(push.encoded_bytes) != expected ||
      payload.size() != 1 || payload[0].size() != expected) {
    return "encoded push of " + std::to_string(push.encoded_bytes) + " bytes in " +
           std::to_string(payload.size()) + " frames; " + std::to_string(size) + " floats in " +
           name + " are one frame of " + std::to_string(expected);
  }
  std::vector<float> values(static_cast<size_t>(size));
  const Status decoded = compress::Decode(
      codec, {static_cast<const std::byte*>(payload[0].data()), payload[0].size()}, values);
  if (!decoded.ok()) return decoded.message();
  payload.clear();
  payload.emplace_back(values.data(), values.size() * sizeof(float));
  return "";
}

}  // namespace

OpenedPush OpenPush(const proto::Push& push, int64_t size, std::string_view holder,
                    net::Frames& payload, const compress::Codec& codec) {
  OpenedPush opened;
  const bool encoded = push.encoded_bytes != 0 || !push.codec.empty();
  if (codec.kind == compress::Kind::kNone && encoded) {
    opened.fault = OpenedPush::kLayout;
    opened.why = "push is encoded; this job's pushes are dense";
    return opened;
  }
  // The size first: an encoded push's decoded floats are allocated by it.
  if (push.num_params != size) {
    opened.fault = OpenedPush::kSize;
    opened.why = "push carries " + std::to_string(push.num_params) + " parameters, " +
                 std::string(holder) + " has " + std::to_string(size);
    return opened;
  }
  if (codec.kind != compress::Kind::kNone) {
    if (std::string why = DecodePayload(push, size, codec, payload); !why.empty()) {
      opened.fault = OpenedPush::kLayout;
      opened.why = std::move(why);
      return opened;
    }
  }
  Result<proto::IncomingTensor> tensor = proto::IncomingTensor::Open(
      push.num_params, push.chunks, push.chunk_floats, std::move(payload));
  if (!tensor.ok()) {
    opened.fault = OpenedPush::kLayout;
    opened.why = tensor.status().message();
    return opened;
  }
  opened.tensor = std::make_shared<proto::IncomingTensor>(std::move(tensor).value());
  if (!opened.tensor->streamed() && !opened.tensor->AllFinite(0, opened.tensor->size())) {
    opened.fault = OpenedPush::kNonFinite;
    opened.why = "gradient contains NaN or infinite values";
  }
  return opened;
}

void PushStreams::Follow(int64_t worker, std::shared_ptr<proto::IncomingTensor> tensor,
                         int64_t clock) {
  if (tensor == nullptr || !tensor->streamed() || tensor->settled()) return;
  streams_[worker] = {std::move(tensor), clock, Clock::now()};
}

PushStreams::Taken PushStreams::Take(int64_t worker, int64_t index, net::Frames& payload) {
  auto it = streams_.find(worker);
  if (it == streams_.end()) {
    return {Verdict::kNoStream, 0, Status::Ok(),
            "chunk " + std::to_string(index) + " without a streamed push to belong to"};
  }
  const int64_t clock = it->second.clock;
  Result<bool> finite = TakeChunk(*it->second.tensor, index, payload);
  if (!finite.ok()) {
    return {Verdict::kBroken, clock, finite.status(),
            "push " + std::to_string(clock) + ": " + finite.status().message()};
  }
  it->second.last_chunk = Clock::now();
  if (it->second.tensor->complete()) streams_.erase(it);
  if (!*finite) {
    return {Verdict::kNonFinite, clock, Status::Ok(),
            "push " + std::to_string(clock) + ", chunk " + std::to_string(index) +
                " contains NaN or infinite values"};
  }
  return {Verdict::kTaken, clock, Status::Ok(), ""};
}

bool PushStreams::Close(int64_t worker) {
  auto it = streams_.find(worker);
  if (it == streams_.end()) return false;
  it->second.tensor->Close();
  streams_.erase(it);
  return true;
}

std::vector<int64_t> PushStreams::StalledAt(Clock::time_point now, Clock::duration limit) const {
  std::vector<int64_t> stalled;
  for (const auto& [worker, stream] : streams_) {
    if (now - stream.last_chunk >= limit) stalled.push_back(worker);
  }
  return stalled;
}

}  // namespace dmlps::server
