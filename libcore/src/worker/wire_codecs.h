// A worker's side of the job's codecs (docs/compression.md, "Compressed
// pushes and pulls"): its pushes encoded through its error feedback, and
// the model it holds, which each encoded model's change is added into.
#ifndef DMLPS_WORKER_WIRE_CODECS_H_
#define DMLPS_WORKER_WIRE_CODECS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/compress/compress.h"
#include "dmlps/net/endpoint.h"
#include "dmlps/proto/codec.h"

namespace dmlps::worker {

class WireCodecs {
 public:
  // Takes the codecs a (new) Welcome names: a fresh residual, no model
  // held yet. Protocol error for a codec this worker does not know, or
  // codecs with sharded servers.
  Status Take(const proto::Welcome& welcome);

  bool encodes_pushes() const { return push_.kind != compress::Kind::kNone; }
  // The payload bytes a push of `floats` floats puts on the wire.
  int64_t PushBytes(size_t floats) const;
  // Encodes `values` through the residual into one frame of *payload and
  // says so in *push. Values that are not finite go encoded as they are,
  // without the residual, for the server to refuse as it refuses a dense
  // push that holds them; the residual keeps what it held.
  // REQUIRES: encodes_pushes().
  void EncodePush(std::span<const float> values, proto::Push* push, net::Frames* payload);

  // An encoded model (Model::encoded_bytes): adds its change into the
  // model held and copies that to `params`. Protocol error, nothing
  // changed, when none is held, or its bytes do not fit or decode.
  Status TakeChange(const proto::Message& message, std::span<float> params);
  // A whole model was taken into `params`: the changes that follow add up
  // from it (nothing without a pull codec).
  void Hold(std::span<const float> params);

 private:
  compress::Codec push_;
  compress::Codec pull_;
  compress::ErrorFeedback feedback_;  // what the pushes have not sent yet
  std::vector<std::byte> encoded_;    // the last push encoded, reused
  // Under a pull codec: the model as the server last sent it.
  std::vector<float> held_;
  bool holding_ = false;
};

}  // namespace dmlps::worker

#endif  // DMLPS_WORKER_WIRE_CODECS_H_
