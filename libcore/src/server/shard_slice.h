// Sharded servers: what a shard beyond 0 starts its slice of the model
// from, as shard 0's Welcome tells it. A built-in model every shard
// initializes the same way from the seed; an external model (whose initial
// values only shard 0 has, from the first worker) comes as its layout and
// this shard's slice of the initial values, in the Welcome's payload.
#ifndef DMLPS_SERVER_SHARD_SLICE_H_
#define DMLPS_SERVER_SHARD_SLICE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "dmlps/base/status.h"
#include "dmlps/proto/messages.h"

namespace dmlps::server {

struct InitialSlice {
  std::string model;   // its name, for the log
  int64_t num_params;  // the whole model's
  int64_t begin;       // this slice in the flat parameter vector
  std::vector<float> values;
  // The whole model's tensors, by which the optimizer's parameter groups
  // are found.
  std::vector<model::TensorSpec> layout;
};

// Shard `shard_index` of `shard_count`'s slice of the model `welcome`
// describes, `payload` holding the slice's initial values for an external
// model. Protocol error when the model, its size, the bounds (ShardBounds)
// or the values (count, NaN or infinity) do not fit; the error of
// ParseModelSpec or ValidateLayout for a model this shard cannot build.
Result<InitialSlice> TakeInitialSlice(const proto::Welcome& welcome,
                                      std::span<const zmq::message_t> payload, int64_t shard_index,
                                      int64_t shard_count);

// Appends `values`[begin, begin + count) to `frames` in frames of at most
// proto::kDefaultChunkBytes, without copying: a shard's slice of an
// external model's initial values, for its Welcome.
void AppendSliceFrames(std::shared_ptr<const std::vector<float>> values, int64_t begin,
                       int64_t count, std::vector<zmq::message_t>* frames);

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_SHARD_SLICE_H_
