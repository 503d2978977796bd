// What a server takes in from a worker's push: the header checked, the
// payload opened (whole, or announced and then streamed chunk by chunk),
// and the streams in flight followed to their last chunk. Shard 0, the
// other shards and the transport bench's server share it; it decides and
// says why, and each of them refuses in its own words and advances its own
// model store.
#ifndef DMLPS_SERVER_INTAKE_H_
#define DMLPS_SERVER_INTAKE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/compress/compress.h"
#include "dmlps/net/endpoint.h"
#include "dmlps/proto/codec.h"
#include "dmlps/sync/policy.h"
#include "server/loop.h"

namespace dmlps::server {

// A push's payload as the server holds it: null when it was refused.
using Gradient = std::shared_ptr<proto::IncomingTensor>;

// Whether `push` reports a negative count or time: no worker sends one, so
// the push is refused before it counts as a step.
bool HasNegativeCounts(const proto::Push& push);

// Whether `push` reports a count or time beyond any run: a clock or base
// version past 2^40 either way, samples or a batch past 2^31, a time past
// 2^50 us (35 years), memory past 2^50 bytes. The server does arithmetic
// on them (staleness, busy time, sums over the run), which such values
// would overflow, so the push is refused before it counts as a step.
bool HasImplausibleCounts(const proto::Push& push);

// What the policy learns of `push`, which arrived at `now`; `replied_at` is
// when the worker's last model reply was queued (epoch: none yet), from
// which the cycle a worker cannot time itself follows.
sync::PushInfo PushInfoOf(const proto::Push& push, Clock::time_point replied_at,
                          Clock::time_point now);

// A push's payload, opened and checked.
struct OpenedPush {
  enum Fault {
    kNone,
    kSize,       // the push carries another number of parameters than the receiver holds
    kLayout,     // the payload does not fit its header
    kNonFinite,  // a payload that came whole holds NaN or infinity
  };
  Fault fault = kNone;
  // Set with a fault: "push carries 9 parameters, the model has 8", the
  // layout's problem, or "gradient contains NaN or infinite values".
  std::string why;
  // With kNone and kNonFinite: the payload, whole or waiting for its chunks
  // (PushStreams follows those). Null otherwise.
  std::shared_ptr<proto::IncomingTensor> tensor;
};

// Opens the payload that came with `push`, for a receiver holding `size`
// floats (`holder` names them in OpenedPush::why: "the model"). Only a
// payload that came whole is checked for NaN here; a streamed one is
// checked chunk by chunk as PushStreams takes the chunks. Under a push
// `codec` (not none) the push must be encoded in it, inline, and is decoded
// into a dense payload first; a push in another codec, a dense one, or
// bytes that do not decode are a kLayout fault. Without one, an encoded
// push is a kLayout fault.
OpenedPush OpenPush(const proto::Push& push, int64_t size, std::string_view holder,
                    net::Frames& payload, const compress::Codec& codec = {});

// The streamed pushes whose chunks are still coming, one per worker at
// most. It never advances the model store: after a chunk is taken or a
// stream closed, the caller does, once it has sent what it refuses, so that
// a worker hears why before the replies the chunk lets go.
class PushStreams {
 public:
  enum class Verdict {
    kTaken,      // the chunk is in
    kNonFinite,  // the chunk is in but left out: it holds NaN or infinity
    kNoStream,   // the worker has no streamed push in flight
    kBroken,     // not taken, the stream stays open: `error` says why
  };
  struct Taken {
    Verdict verdict = Verdict::kTaken;
    int64_t clock = 0;  // of the push the chunk belongs to
    Status error;       // kBroken: the Protocol error IncomingTensor::Add gave
    // What a refusal says, before what the receiver leaves out: "chunk 3
    // without a streamed push to belong to", "push 7, chunk 3 contains NaN
    // or infinite values", "push 7: <error>". Empty with kTaken.
    std::string why;
  };

  // Follows the push of `worker` at its `clock` when chunks of `tensor` are
  // still to come; otherwise nothing. A stream the worker had is replaced,
  // so close that one first to leave its rest out.
  void Follow(int64_t worker, std::shared_ptr<proto::IncomingTensor> tensor, int64_t clock);
  bool open(int64_t worker) const { return streams_.contains(worker); }
  bool any_open() const { return !streams_.empty(); }
  // The clock of the push of `worker` in flight. REQUIRES: open(worker).
  int64_t clock(int64_t worker) const { return streams_.at(worker).clock; }

  // Takes chunk `index` of the stream of `worker` from a Chunk message's
  // payload (see TakeChunk); the stream ends with its last chunk.
  Taken Take(int64_t worker, int64_t index, net::Frames& payload);
  // Gives up on the stream of `worker`: its missing chunks are left out.
  // Whether there was one.
  bool Close(int64_t worker);
  // The workers whose stream got no chunk for `limit` by `now`, in rank order.
  std::vector<int64_t> StalledAt(Clock::time_point now, Clock::duration limit) const;

 private:
  struct Stream {
    std::shared_ptr<proto::IncomingTensor> tensor;
    int64_t clock = 0;             // the worker's own, of the push
    Clock::time_point last_chunk;  // when its last chunk (or header) arrived
  };
  std::map<int64_t, Stream> streams_;  // by worker
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_INTAKE_H_
