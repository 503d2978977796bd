// How a ModelStore (model_store.h) runs what it queued: every lane runs
// every operation in the order queued, each as soon as the data it needs is
// there. A lane's run is planned on the caller's thread (which buffers,
// what to copy), its float work shared out block by block over the store's
// threads, and the lanes then finished in index order on the caller's
// thread, so that a reply's chunks go out in order as each is there.
#ifndef DMLPS_SERVER_LANE_QUEUE_H_
#define DMLPS_SERVER_LANE_QUEUE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "dmlps/base/thread_pool.h"
#include "dmlps/proto/codec.h"
#include "server/block_work.h"
#include "server/lane_buffers.h"
#include "server/push_bound.h"
#include "server/step_clip.h"
#include "server/store_ops.h"

namespace dmlps::server {

class LaneQueue {
 public:
  // Runs operations on the lanes of `layout`, held in `buffers`, with the
  // float work of `work`, taking `bound` and `clip` before a lane sums or
  // steps, on `threads` threads, the caller's included (1: the caller's
  // alone; a model of one lane always runs on the caller's thread). All
  // four outlive the queue.
  LaneQueue(const proto::ChunkLayout& layout, int64_t threads, LaneBuffers& buffers,
            BlockWork& work, const PushBound& bound, const StepClip& clip);
  ~LaneQueue();
  LaneQueue(const LaneQueue&) = delete;
  LaneQueue& operator=(const LaneQueue&) = delete;

  // The threads that run the lanes' float work, the caller's included.
  int64_t threads() const { return pool_ != nullptr ? pool_->threads() : 1; }

  // Queues `op` for every lane and runs at once what it can.
  void Queue(StoreOp op);
  // Runs whatever the data that arrived allows (ModelStore::Advance).
  void Advance();
  // Gives the clipped step `step` waiting for it the sum of squares of its
  // gradient over the whole model (ModelStore::TakeGlobalSquares).
  void TakeGlobalSquares(int64_t step, double squares);

  // Operations not yet run by every lane.
  int64_t pending() const { return static_cast<int64_t>(ops_.size()); }
  // Whether a kApply queued has yet to run on some lane.
  bool ApplyPending() const;

 private:
  // What one lane runs in one go: planned on the caller's thread (which
  // buffers, what to copy), its float work run on any thread, then finished
  // on the caller's thread.
  struct LaneRun {
    // Operations up to and including a Send, or the last ones: a reply
    // views the lane as it stands after the Send, so an apply after it
    // must not change that buffer in place.
    struct Segment {
      int64_t first = 0;  // queue positions [first, last)
      int64_t last = 0;
      // The lane's buffer the segment works on; holding it here marks it
      // as viewed for the segments after a Send.
      std::shared_ptr<std::vector<float>> params;
      // When set, copied into params before the segment (copy on write).
      std::shared_ptr<std::vector<float>> copy_from;
      // The lane's candidate buffer, when the segment holds a check that
      // computes its step out of place there.
      std::shared_ptr<std::vector<float>> out;
    };
    int64_t lane = 0;
    int64_t first = 0;  // queue positions [first, ready) that the lane runs
    int64_t ready = 0;
    std::vector<char> fills;  // per operation: copy the lane into its point
    std::vector<Segment> segments;
    bool floats = false;  // whether anything but handing over is to do
  };

  StoreOp& At(int64_t at) { return ops_[static_cast<size_t>(at - first_op_)]; }
  // Plans and runs every lane once; whether any lane ran anything.
  bool AdvancePass();
  // Plans lane `lane`'s run of whatever its data allows into `run`, and
  // moves its cursor past it; false when nothing can run.
  bool PlanLane(int64_t lane, LaneRun* run);
  // Cuts `run`'s operations into segments, each on the buffer it works on.
  void PlanSegments(LaneRun* run);
  // Runs the float work of `run` on floats [from, to) of its lane.
  void RunFloats(const LaneRun& run, int64_t from, int64_t to);
  // After the float work of `run`: frees, hands over, counts down, and lets
  // go of the buffers it held.
  void FinishLane(LaneRun& run);
  // Whether lane `lane` has what `op` needs.
  bool Ready(const StoreOp& op, int64_t lane) const;
  // After the operation at `at` ran over all of lane `lane`, whose values
  // were at `params`: frees, hands over, counts down.
  void Finish(int64_t at, int64_t lane, const std::shared_ptr<std::vector<float>>& params);
  // Frees lane `lane`'s frames of the pushes of the operation at `at` that
  // no later operation needs.
  void Release(int64_t at, int64_t lane);

  const proto::ChunkLayout layout_;
  LaneBuffers& buffers_;
  BlockWork& work_;
  const PushBound& bound_;
  const StepClip& clip_;
  std::deque<StoreOp> ops_;           // references to elements survive push_back
  int64_t first_op_ = 0;              // the queue position of ops_.front()
  std::vector<int64_t> cursor_;       // per lane: the queue position of its next operation
  std::unique_ptr<ThreadPool> pool_;  // null: everything on the caller's thread
  std::vector<LaneRun> runs_;         // Advance's plans, kept for their memory
  bool advancing_ = false;            // inside Advance: a callback's TakeGlobalSquares waits for it
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_LANE_QUEUE_H_
