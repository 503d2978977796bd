// The workers' pushes a server shard beyond 0 (shard.h) holds until shard
// 0's orders name them (Order kStage, kDiscard): each opened whole or
// followed chunk by chunk, and kept by its worker's rank and clock.
#ifndef DMLPS_SERVER_SHARD_PUSHES_H_
#define DMLPS_SERVER_SHARD_PUSHES_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dmlps/net/endpoint.h"
#include "dmlps/proto/codec.h"
#include "server/intake.h"
#include "server/loop.h"

namespace dmlps::server {

class ShardPushes {
 public:
  // Pushes of one worker that shard 0 has not ordered yet, at most.
  static constexpr int64_t kMaxUnordered = 16;

  // Pushes of a slice of `size` floats.
  explicit ShardPushes(int64_t size) : size_(size) {}

  // Whether worker `rank` holds as many pushes that shard 0 has not ordered
  // as it may: a worker waits for its reply before its next push, so more
  // is a peer gone rogue, whose next push is refused.
  bool Full(int64_t rank) const;
  // Takes the push of worker `rank`, `payload` coming with it, and holds it
  // for its order (none when the order to discard it came first). A push
  // that does not fit the slice is held as one that carries nothing, and
  // one holding NaN or infinity as one whose values are all left out, so
  // that the orders naming them go on: then returns what to refuse it
  // with; empty otherwise. REQUIRES: !streaming(rank) (Close it first).
  std::string Take(int64_t rank, const proto::Push& push, net::Frames& payload);
  // The push of worker `rank` at `clock`, no longer held; null when it has
  // not come.
  std::shared_ptr<proto::IncomingTensor> Claim(int64_t rank, int64_t clock);
  // Drops the push of worker `rank` at `clock`, or the push itself when it
  // comes.
  void Discard(int64_t rank, int64_t clock);
  // Worker `rank` is lost: the orders to discard pushes of it that never
  // came are dropped. Its pushes held stay: shard 0 may still order them.
  void Forget(int64_t rank);

  // The streamed pushes in flight (PushStreams).
  bool streaming(int64_t rank) const { return streams_.open(rank); }
  int64_t clock(int64_t rank) const { return streams_.clock(rank); }
  PushStreams::Taken TakeChunk(int64_t rank, int64_t index, net::Frames& payload) {
    return streams_.Take(rank, index, payload);
  }
  bool Close(int64_t rank) { return streams_.Close(rank); }
  std::vector<int64_t> StalledAt(Clock::time_point now, Clock::duration limit) const {
    return streams_.StalledAt(now, limit);
  }

 private:
  using PushKey = std::pair<int64_t, int64_t>;  // rank, the worker's clock

  int64_t size_ = 0;
  PushStreams streams_;  // the pushes whose chunks are coming, by rank
  std::map<PushKey, std::shared_ptr<proto::IncomingTensor>> pushes_;  // not ordered yet
  std::set<PushKey> discarded_;  // discarded before they arrived
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_SHARD_PUSHES_H_
