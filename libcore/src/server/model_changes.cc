#include "server/model_changes.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "dmlps/proto/digest.h"

namespace dmlps::server {

bool EncodeChange(const compress::Codec& codec, std::span<const float> model, Replica* replica,
                  std::vector<std::byte>* out) {
  if (replica->values.size() != model.size()) {
    replica->values.assign(model.begin(), model.end());
    return false;
  }
  std::vector<float> change(model.size());
  for (size_t i = 0; i < model.size(); ++i) change[i] = model[i] - replica->values[i];
  compress::Encode(codec, change, out);
  // The worker adds exactly this into its copy (ServerLink::TakeModel).
  if (!compress::DecodeAdd(codec, *out, 1.0F, replica->values).ok()) {
    replica->values.assign(model.begin(), model.end());
    return false;
  }
  return true;
}

void QueueChangeReply(ModelStore& store, net::Endpoint& endpoint, const zmq::message_t& identity,
                      proto::Model header, const std::string& who,
                      std::function<void(const Status&)> failed, bool digest,
                      const compress::Codec& codec, std::shared_ptr<Replica> replica,
                      std::shared_ptr<std::atomic<int64_t>> bytes_sent) {
  header.num_params = store.size();
  header.chunks = 0;
  header.chunk_floats = 0;
  auto peer =
      std::make_shared<std::string>(static_cast<const char*>(identity.data()), identity.size());
  store.Snapshot([&endpoint, peer, header, who, failed, digest, codec, replica,
                  bytes_sent](std::shared_ptr<const std::vector<float>> model) mutable {
    std::vector<std::byte> bytes;
    net::Frames payload;
    if (EncodeChange(codec, *model, replica.get(), &bytes)) {
      header.codec = compress::CodecName(codec);
      header.encoded_bytes = static_cast<int64_t>(bytes.size());
      payload.emplace_back(bytes.data(), bytes.size());
    } else {
      if (digest) {
        proto::ModelDigest d;
        d.Add(*model);
        header.digest = d.value();
        spdlog::info("sent {} version {} of the model, digest {:016x}", who, header.version,
                     d.value());
      }
      payload.emplace_back(model->data(), model->size() * sizeof(float));
    }
    *bytes_sent += static_cast<int64_t>(payload[0].size());
    zmq::message_t id(peer->data(), peer->size());
    Status sent = endpoint.SendMessage(&id, header, std::move(payload));
    if (sent.ok()) return;
    replica->values.clear();
    spdlog::warn("cannot send the model to {}: {}", who, sent.ToString());
    if (failed) failed(sent);
  });
}

}  // namespace dmlps::server
