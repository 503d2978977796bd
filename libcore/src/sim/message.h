// What the simulated server and workers send each other: the protocol's
// messages as far as the simulation needs them, a model by reference.
#ifndef DMLPS_SIM_MESSAGE_H_
#define DMLPS_SIM_MESSAGE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "dmlps/compress/compress.h"
#include "dmlps/sync/policy.h"

namespace dmlps::sim {

// A message's msgpack header, about; payloads add their encoded floats.
inline constexpr int64_t kHeaderBytes = 96;

// A message carrying `params` floats in `codec`: the header and the payload,
// 4 bytes a parameter uncompressed (compress::EncodedBytes).
inline int64_t MessageBytes(const compress::Codec& codec, int64_t params) {
  return kHeaderBytes +
         static_cast<int64_t>(compress::EncodedBytes(codec, static_cast<size_t>(params)));
}

enum class MessageKind { kPull, kPush, kModel, kContinue, kSyncNow, kOrders };

// One decision of shard 0 that another server shard carries out on its
// slice (proto::Order, as far as its cost goes).
struct ShardOrder {
  enum class Kind { kStage, kDiscard, kApply, kReply };
  Kind kind = Kind::kStage;
  int64_t worker = -1;  // stage, discard, reply
  double passes = 0;    // passes over the slice it takes
};
// A message's bytes per order, about (msgpack: four numbers).
inline constexpr int64_t kOrderBytes = 24;

struct Message {
  MessageKind kind = MessageKind::kPull;
  int64_t worker = 0;
  int64_t clock = 0;                                // pull
  sync::PushInfo push;                              // push
  std::shared_ptr<const std::vector<float>> model;  // model
  int64_t version = 0;                              // model
  int64_t batch = 0;                                // model: the batch from now on; 0: unchanged
  int64_t token = -1;                               // model, continue
  int64_t local_steps = 0;                          // model: local steps from now on; 0: unchanged
  bool download = false;                            // continue
  int64_t round = 0;                                // sync now
  int64_t shard = 0;                                // the server shard it goes to or comes from
  std::shared_ptr<const std::vector<ShardOrder>> orders;  // orders, to a shard beyond 0
};

}  // namespace dmlps::sim

#endif  // DMLPS_SIM_MESSAGE_H_
