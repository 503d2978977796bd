#include "worker/wire_codecs.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace dmlps::worker {

Status WireCodecs::Take(const proto::Welcome& welcome) {
  Result<compress::Codec> push = compress::ParseCodec(welcome.push_codec);
  Result<compress::Codec> pull = compress::ParseCodec(welcome.pull_codec);
  if (!push.ok() || !pull.ok()) {
    return Status::Protocol("the server named a codec this worker does not know: " +
                            (push.ok() ? pull : push).status().message());
  }
  const bool any = push->kind != compress::Kind::kNone || pull->kind != compress::Kind::kNone;
  if (any && welcome.servers.size() > 1) {
    return Status::Protocol("the server asked for codecs with sharded servers");
  }
  if (any) {
    spdlog::info("pushes encoded in {}, models after the first in {}", welcome.push_codec,
                 welcome.pull_codec);
  }
  push_ = *push;
  pull_ = *pull;
  // What the residual held is lost with the server's view of this worker.
  feedback_.Reset();
  held_.clear();
  holding_ = false;
  return Status::Ok();
}

int64_t WireCodecs::PushBytes(size_t floats) const {
  if (!encodes_pushes()) return static_cast<int64_t>(floats * sizeof(float));
  return static_cast<int64_t>(compress::EncodedBytes(push_, floats));
}

void WireCodecs::EncodePush(std::span<const float> values, proto::Push* push,
                            net::Frames* payload) {
  if (!feedback_.Encode(push_, values, &encoded_).ok()) compress::Encode(push_, values, &encoded_);
  push->num_params = static_cast<int64_t>(values.size());
  push->codec = compress::CodecName(push_);
  push->encoded_bytes = static_cast<int64_t>(encoded_.size());
  push->chunks = 0;
  push->chunk_floats = 0;
  payload->emplace_back(encoded_.data(), encoded_.size());
}

Status WireCodecs::TakeChange(const proto::Message& message, std::span<float> params) {
  const auto& header = std::get<proto::Model>(message.body);
  if (pull_.kind == compress::Kind::kNone || !holding_) {
    return Status::Protocol(pull_.kind == compress::Kind::kNone
                                ? "the server sent an encoded model to a job without a pull codec"
                                : "the server sent an encoded model before a whole one");
  }
  if (header.codec != compress::CodecName(pull_) || header.chunks != 0 ||
      header.num_params != static_cast<int64_t>(params.size()) || message.payload.size() != 1 ||
      static_cast<int64_t>(message.payload[0].size()) != header.encoded_bytes) {
    return Status::Protocol("the server sent an encoded model that does not fit its header");
  }
  const auto* data = static_cast<const std::byte*>(message.payload[0].data());
  DMLPS_RETURN_IF_ERROR(compress::DecodeAdd(pull_, {data, message.payload[0].size()}, 1.0F, held_)
                            .WithContext("bad model from the server"));
  std::copy(held_.begin(), held_.end(), params.begin());
  return Status::Ok();
}

void WireCodecs::Hold(std::span<const float> params) {
  if (pull_.kind == compress::Kind::kNone) return;
  held_.assign(params.begin(), params.end());
  holding_ = true;
}

}  // namespace dmlps::worker
