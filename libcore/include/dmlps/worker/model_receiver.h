// A model, or one shard's slice of it, copied into place as it arrives:
// what came inline with its Model message at once, then chunk by chunk,
// each chunk's frames freed once copied, so that those of a large model
// never pile up beside the copy. The worker and the transport bench's workers take their
// downloads through it; each awaits the chunks in its own way.
#ifndef DMLPS_WORKER_MODEL_RECEIVER_H_
#define DMLPS_WORKER_MODEL_RECEIVER_H_

#include <span>

#include "dmlps/base/status.h"
#include "dmlps/proto/codec.h"

namespace dmlps::worker {

class ModelReceiver {
 public:
  // Opens the payload of `message`, a Model, and copies what came inline
  // into `out`, which must outlive the receiver. Protocol error when the
  // payload does not fit its header. REQUIRES: the header's num_params is
  // out.size() (the caller checks, to say whose model did not fit).
  static Result<ModelReceiver> Open(proto::Message& message, std::span<float> out);

  // True once every float is in place: no more chunks to await.
  bool complete() const { return model_.complete(); }
  // Copies the floats a Chunk message carries into place. Protocol error,
  // and nothing taken, when it is not the next chunk or does not fit.
  Status Take(proto::Message& chunk);

 private:
  ModelReceiver(proto::IncomingTensor model, std::span<float> out)
      : model_(std::move(model)), out_(out) {}

  proto::IncomingTensor model_;
  std::span<float> out_;
};

}  // namespace dmlps::worker

#endif  // DMLPS_WORKER_MODEL_RECEIVER_H_
