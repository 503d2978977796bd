#include "server/shard_slice.h"

#include <algorithm>

#include "dmlps/model/layout.h"
#include "dmlps/model/model.h"
#include "dmlps/proto/codec.h"
#include "dmlps/server/server.h"

namespace dmlps::server {
namespace {

// The slice of the external model: its layout and initial values, sent
// by shard 0.
Result<InitialSlice> ExternalSlice(const proto::Welcome& welcome,
                                   std::span<const zmq::message_t> payload, int64_t begin,
                                   int64_t size) {
  Result<int64_t> num_params = model::ValidateLayout(welcome.layout);
  if (!num_params.ok()) {
    return Status::Protocol("shard 0 sent an external model's layout that is not one: " +
                            num_params.status().message());
  }
  if (*num_params != welcome.num_params) {
    return Status::Protocol("shard 0 sent an external model of " +
                            std::to_string(welcome.num_params) + " parameters, its layout has " +
                            std::to_string(*num_params));
  }
  Result<proto::TensorView> view = proto::TensorView::Make(payload, size);
  if (!view.ok()) {
    return Status::Protocol("shard 0 sent a bad slice of the initial values: " +
                            view.status().message());
  }
  if (!view->AllFinite()) {
    return Status::Protocol("shard 0 sent initial values holding NaN or infinity");
  }
  InitialSlice slice{"external, " + std::to_string(welcome.layout.size()) + " tensors", *num_params,
                     begin, std::vector<float>(static_cast<size_t>(size))};
  view->CopyTo(slice.values);
  slice.layout = welcome.layout;
  return slice;
}

}  // namespace

Result<InitialSlice> TakeInitialSlice(const proto::Welcome& welcome,
                                      std::span<const zmq::message_t> payload, int64_t shard_index,
                                      int64_t shard_count) {
  if (welcome.num_params < shard_count ||
      welcome.bounds != ShardBounds(welcome.num_params, shard_count)) {
    return Status::Protocol("shard 0 sent a model of " + std::to_string(welcome.num_params) +
                            " parameters cut into slices that do not fit " +
                            std::to_string(shard_count) + " shards");
  }
  const int64_t begin = welcome.bounds[static_cast<size_t>(shard_index)];
  const int64_t size = welcome.bounds[static_cast<size_t>(shard_index) + 1] - begin;
  if (welcome.model == kExternalModel) return ExternalSlice(welcome, payload, begin, size);
  DMLPS_ASSIGN_OR_RETURN(model::ModelSpec spec,
                         model::ParseModelSpec(welcome.model, welcome.input_dim, welcome.classes));
  model::Model model(spec);
  if (model.num_params() != welcome.num_params) {
    return Status::Protocol("shard 0 sent a model of " + std::to_string(welcome.num_params) +
                            " parameters or slices that do not fit " + spec.Name());
  }
  // The whole model initialized as shard 0 does; this shard keeps its slice.
  std::vector<float> params(static_cast<size_t>(model.num_params()));
  model.Initialize(welcome.seed, params);
  return InitialSlice{spec.Name(), model.num_params(), begin,
                      std::vector<float>(params.begin() + begin, params.begin() + begin + size),
                      model::LayoutOf(spec)};
}

void AppendSliceFrames(std::shared_ptr<const std::vector<float>> values, int64_t begin,
                       int64_t count, std::vector<zmq::message_t>* frames) {
  const int64_t per_frame = proto::ChunkBytesFor(count * static_cast<int64_t>(sizeof(float))) /
                            static_cast<int64_t>(sizeof(float));
  for (int64_t offset = 0; offset < count; offset += per_frame) {
    proto::AppendRange(values, begin + offset, std::min(per_frame, count - offset), frames);
  }
}

}  // namespace dmlps::server
