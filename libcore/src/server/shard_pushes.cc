#include "server/shard_pushes.h"

#include <algorithm>
#include <climits>

namespace dmlps::server {

bool ShardPushes::Full(int64_t rank) const {
  // Pushes wait here only for shard 0's orders; a worker far ahead of them
  // would make this shard hold them all.
  const auto first = pushes_.lower_bound({rank, INT64_MIN});
  const auto last = pushes_.lower_bound({rank + 1, INT64_MIN});
  return std::distance(first, last) >= kMaxUnordered;
}

std::string ShardPushes::Take(int64_t rank, const proto::Push& push, net::Frames& payload) {
  OpenedPush opened = OpenPush(push, size_, "this shard's slice", payload);
  std::shared_ptr<proto::IncomingTensor> tensor = std::move(opened.tensor);
  std::string refusal;
  if (opened.fault == OpenedPush::kSize || opened.fault == OpenedPush::kLayout) {
    tensor = std::make_shared<proto::IncomingTensor>(
        std::move(proto::IncomingTensor::Open(size_, 1, std::max<int64_t>(size_, 1), {})).value());
    tensor->Close();
    refusal = opened.why + "; this slice of it is left out";
  } else if (opened.fault == OpenedPush::kNonFinite) {
    tensor->Exclude(0, tensor->size());
    refusal = "gradient slice contains NaN or infinite values; this slice of it is left out";
  }
  streams_.Follow(rank, tensor, push.clock);
  const PushKey key{rank, push.clock};
  if (discarded_.erase(key) == 0) pushes_[key] = std::move(tensor);
  return refusal;
}

std::shared_ptr<proto::IncomingTensor> ShardPushes::Claim(int64_t rank, int64_t clock) {
  auto it = pushes_.find({rank, clock});
  if (it == pushes_.end()) return nullptr;
  std::shared_ptr<proto::IncomingTensor> push = std::move(it->second);
  pushes_.erase(it);
  return push;
}

void ShardPushes::Discard(int64_t rank, int64_t clock) {
  if (pushes_.erase({rank, clock}) == 0) discarded_.insert({rank, clock});
}

void ShardPushes::Forget(int64_t rank) {
  std::erase_if(discarded_, [rank](const PushKey& key) { return key.first == rank; });
}

}  // namespace dmlps::server
