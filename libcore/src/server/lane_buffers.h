// The memory of a ModelStore (model_store.h): the model's lanes, which
// replies send from without copying, and the copies snapshots fill.
#ifndef DMLPS_SERVER_LANE_BUFFERS_H_
#define DMLPS_SERVER_LANE_BUFFERS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "dmlps/proto/codec.h"
#include "server/store_ops.h"

namespace dmlps::server {

// The model, one buffer per lane. A buffer that a reply's frames still view
// never changes under them: a lane about to change in place gets a buffer
// of its own first (copy on write), or its step goes to the lane's
// candidate buffer and is swapped in, so that a lane alternates between two.
class LaneBuffers {
 public:
  // `params` cut into the lanes of `layout`.
  LaneBuffers(const std::vector<float>& params, const proto::ChunkLayout& layout);

  // Lane `lane`'s buffer as it stands.
  const std::shared_ptr<std::vector<float>>& lane(int64_t lane) const {
    return lanes_[static_cast<size_t>(lane)];
  }
  // Lane `lane`'s candidate buffer, for a check to compute its step in: the
  // one it has when nothing views it any more, else a fresh one.
  std::shared_ptr<std::vector<float>> Candidate(int64_t lane);
  // Takes the step computed in lane `lane`'s candidate: swaps it in, the
  // old buffer (which replies may still view) becoming the next candidate.
  void SwapCandidate(int64_t lane);
  // Gives lane `lane` a buffer of its own before it changes, when a reply
  // still views the one it has; returns the buffer to copy from into the
  // new one (null: none is needed), which the caller copies.
  std::shared_ptr<std::vector<float>> Unshare(int64_t lane);
  // A copy of the model where every lane stands now.
  std::vector<float> Params() const;

 private:
  int64_t size_ = 0;
  std::vector<std::shared_ptr<std::vector<float>>> lanes_;
  // Per lane: the buffer it had before its last copy on write, for reuse.
  std::vector<std::shared_ptr<std::vector<float>>> spares_;
  // Per lane: the buffer a step computed out of place goes to.
  std::vector<std::shared_ptr<std::vector<float>>> candidates_;
};

// The copies of the model that snapshots fill: one per state of the model
// asked for, shared by every snapshot of that state, its buffer reused once
// no one holds it any more, since a fresh copy of a large model costs page
// faults.
class SnapshotCopies {
 public:
  // Copies of a model of `size` floats in `lanes` lanes.
  SnapshotCopies(int64_t size, int64_t lanes) : size_(size), lanes_(lanes) {}

  // The copy of the model as it stands after the operations queued so far:
  // the one made for that state, else a new one whose lanes are yet to be
  // filled.
  std::shared_ptr<ModelPoint> Current();
  // The model changes from here on: the next Current is a new copy.
  void Changed() { point_ = nullptr; }

 private:
  // A buffer of the model's size that no snapshot holds any more.
  std::shared_ptr<std::vector<float>> Buffer();

  int64_t size_ = 0;
  int64_t lanes_ = 0;
  std::shared_ptr<ModelPoint> point_;  // the state after the last queued operation, once asked for
  std::vector<std::shared_ptr<std::vector<float>>> buffers_;  // copies to reuse
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_LANE_BUFFERS_H_
