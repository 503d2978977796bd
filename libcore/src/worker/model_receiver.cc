#include "dmlps/worker/model_receiver.h"

#include <utility>
#include <variant>

namespace dmlps::worker {

Result<ModelReceiver> ModelReceiver::Open(proto::Message& message, std::span<float> out) {
  const auto& header = std::get<proto::Model>(message.body);
  DMLPS_ASSIGN_OR_RETURN(
      proto::IncomingTensor model,
      proto::IncomingTensor::Open(header.num_params, header.chunks, header.chunk_floats,
                                  std::move(message.payload)));
  model.CopyTo(0, model.received(), out);
  return ModelReceiver(std::move(model), out);
}

Status ModelReceiver::Take(proto::Message& chunk) {
  const int64_t begin = model_.received();
  DMLPS_RETURN_IF_ERROR(model_.Add(std::get<proto::Chunk>(chunk.body).index, chunk.payload));
  model_.CopyTo(begin, model_.received(), out_);
  model_.Release(begin, model_.received());
  return Status::Ok();
}

}  // namespace dmlps::worker
