#include "server/lane_buffers.h"

#include <atomic>
#include <utility>

namespace dmlps::server {
namespace {

// Snapshot copies kept for reuse (the evaluator's few).
constexpr size_t kMaxBuffers = 4;

// Whether `buffer` is held here only: ZeroMQ's I/O threads drop their
// references when they are done sending from it, and no one else can take
// a new one, so it may then be written.
bool SoleOwner(const std::shared_ptr<std::vector<float>>& buffer) {
  if (buffer.use_count() != 1) return false;
  // use_count() reads relaxed: order the I/O thread's last reads before
  // our writes.
  std::atomic_thread_fence(std::memory_order_acquire);
  return true;
}

}  // namespace

LaneBuffers::LaneBuffers(const std::vector<float>& params, const proto::ChunkLayout& layout)
    : size_(layout.size),
      lanes_(static_cast<size_t>(layout.count())),
      spares_(static_cast<size_t>(layout.count())),
      candidates_(static_cast<size_t>(layout.count())) {
  for (int64_t lane = 0; lane < layout.count(); ++lane) {
    lanes_[static_cast<size_t>(lane)] = std::make_shared<std::vector<float>>(
        params.begin() + layout.begin(lane), params.begin() + layout.end(lane));
  }
}

std::vector<float> LaneBuffers::Params() const {
  std::vector<float> params;
  params.reserve(static_cast<size_t>(size_));
  for (const auto& lane : lanes_) params.insert(params.end(), lane->begin(), lane->end());
  return params;
}

std::shared_ptr<std::vector<float>> LaneBuffers::Candidate(int64_t lane) {
  std::shared_ptr<std::vector<float>>& candidate = candidates_[static_cast<size_t>(lane)];
  if (candidate == nullptr || !SoleOwner(candidate)) {
    candidate = std::make_shared<std::vector<float>>(lanes_[static_cast<size_t>(lane)]->size());
  }
  return candidate;
}

void LaneBuffers::SwapCandidate(int64_t lane) {
  std::swap(lanes_[static_cast<size_t>(lane)], candidates_[static_cast<size_t>(lane)]);
}

std::shared_ptr<std::vector<float>> LaneBuffers::Unshare(int64_t lane) {
  std::shared_ptr<std::vector<float>>& current = lanes_[static_cast<size_t>(lane)];
  if (SoleOwner(current)) return nullptr;  // no frame views it: change it in place
  std::shared_ptr<std::vector<float>>& spare = spares_[static_cast<size_t>(lane)];
  std::shared_ptr<std::vector<float>> fresh =
      spare != nullptr && SoleOwner(spare) ? spare
                                           : std::make_shared<std::vector<float>>(current->size());
  spare = std::move(current);
  current = std::move(fresh);
  return spare;
}

std::shared_ptr<std::vector<float>> SnapshotCopies::Buffer() {
  // A buffer only this store holds is free: no evaluation uses it.
  for (const std::shared_ptr<std::vector<float>>& b : buffers_) {
    if (SoleOwner(b)) return b;
  }
  auto fresh = std::make_shared<std::vector<float>>(static_cast<size_t>(size_));
  if (buffers_.size() < kMaxBuffers) buffers_.push_back(fresh);
  return fresh;
}

std::shared_ptr<ModelPoint> SnapshotCopies::Current() {
  if (point_ == nullptr) {
    point_ = std::make_shared<ModelPoint>();
    point_->values = Buffer();
    point_->filled.assign(static_cast<size_t>(lanes_), 0);
  }
  return point_;
}

}  // namespace dmlps::server
