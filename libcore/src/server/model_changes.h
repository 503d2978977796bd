// Models sent under a pull codec (docs/compression.md, "Compressed pushes
// and pulls"): a worker's first model since joining goes whole; each later
// one as its change from the model that worker holds, encoded. The server
// keeps that model (the worker's replica) and adds into it exactly what the
// worker adds into its own, so both stay the same bit for bit and what the
// codec dropped is carried by the next change.
#ifndef DMLPS_SERVER_MODEL_CHANGES_H_
#define DMLPS_SERVER_MODEL_CHANGES_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "dmlps/base/status.h"
#include "dmlps/compress/compress.h"
#include "dmlps/net/endpoint.h"
#include "dmlps/proto/messages.h"
#include "server/model_store.h"

namespace dmlps::server {

// The model as one worker holds it: what the server sent it, whole and as
// decoded changes. Empty: none yet (its next model goes whole).
struct Replica {
  std::vector<float> values;
};

// Encodes `model` - replica in `codec` into *out and adds the decoded change
// into the replica (compress::DecodeAdd, scale 1): what the worker does with
// the bytes. False, with the replica set to `model`, when there was no
// replica yet or the change does not decode (the model itself is not
// finite): the model is then to be sent whole.
bool EncodeChange(const compress::Codec& codec, std::span<const float> model, Replica* replica,
                  std::vector<std::byte>* out);

// Queues sending `header` and the model as it stands after the operations
// queued before (ModelStore::Send) to the worker of `identity` under a pull
// `codec`: inline, whole (with its digest when `digest`) or as an encoded
// change (EncodeChange). `failed` runs when a send fails; the replica is
// then dropped, since the worker lacks what it holds. The payload's bytes
// are added to *bytes_sent. All outlive the reply but `identity`, which is
// copied.
void QueueChangeReply(ModelStore& store, net::Endpoint& endpoint, const zmq::message_t& identity,
                      proto::Model header, const std::string& who,
                      std::function<void(const Status&)> failed, bool digest,
                      const compress::Codec& codec, std::shared_ptr<Replica> replica,
                      std::shared_ptr<std::atomic<int64_t>> bytes_sent);

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_MODEL_CHANGES_H_
