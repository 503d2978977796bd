#include "sim/shards.h"

#include <utility>

namespace dmlps::sim {

SimShards::SimShards(std::vector<int64_t> bounds, int64_t workers, const CostModel& cost,
                     const compress::Codec& pull_codec, ShardHost& host)
    : bounds_(std::move(bounds)),
      cost_(cost),
      pull_codec_(pull_codec),
      host_(host),
      shards_(bounds_.size() - 1) {
  for (Shard& shard : shards_) shard.held.assign(static_cast<size_t>(workers), 0);
}

int64_t SimShards::SliceParams(int64_t k) const {
  return bounds_[static_cast<size_t>(k) + 1] - bounds_[static_cast<size_t>(k)];
}

void SimShards::Receive(int64_t k, Message message) {
  shards_[static_cast<size_t>(k)].inbox.push_back(std::move(message));
  Next(k);
}

void SimShards::Next(int64_t k) {
  Shard& shard = shards_[static_cast<size_t>(k)];
  if (shard.busy) return;
  const auto slice = static_cast<double>(SliceParams(k));
  // Orders that can go on first; then the next message.
  double work = Carry(k);
  if (work == 0 && shard.replies.empty() && !shard.inbox.empty()) {
    Message message = std::move(shard.inbox.front());
    shard.inbox.pop_front();
    work = cost_.message_s;
    if (message.kind == MessageKind::kPush) {
      // As on shard 0: the slice is checked (all finite) before anything else.
      ++shard.held[static_cast<size_t>(message.worker)];
      work += slice * cost_.param_s;
    } else {
      shard.orders.insert(shard.orders.end(), message.orders->begin(), message.orders->end());
    }
    work += Carry(k);
  } else if (work == 0 && shard.replies.empty()) {
    return;  // nothing to do, or an order waits for its push
  }
  shard.busy = true;
  host_.StartShardJob(k, work);
}

double SimShards::Carry(int64_t k) {
  Shard& shard = shards_[static_cast<size_t>(k)];
  const auto slice = static_cast<double>(SliceParams(k));
  double work = 0;
  while (!shard.orders.empty()) {
    const ShardOrder& order = shard.orders.front();
    if (order.kind == ShardOrder::Kind::kStage || order.kind == ShardOrder::Kind::kDiscard) {
      int64_t& held = shard.held[static_cast<size_t>(order.worker)];
      if (held == 0) break;  // its slice is still on the way
      --held;
    } else if (order.kind == ShardOrder::Kind::kReply) {
      shard.replies.push_back(order.worker);
    }
    work += order.passes * slice * cost_.param_s;
    shard.orders.pop_front();
  }
  return work;
}

void SimShards::JobDone(int64_t k) {
  Shard& shard = shards_[static_cast<size_t>(k)];
  const int64_t bytes = MessageBytes(pull_codec_, SliceParams(k));
  for (int64_t w : shard.replies) {
    Message message;
    message.kind = MessageKind::kModel;
    message.worker = w;
    message.shard = k;
    host_.SendFromShard(k, w, bytes, std::move(message));
  }
  shard.replies.clear();
  shard.busy = false;
  Next(k);
}

}  // namespace dmlps::sim
