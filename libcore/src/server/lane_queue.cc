#include "server/lane_queue.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <utility>

#include "dmlps/net/endpoint.h"

namespace dmlps::server {

LaneQueue::LaneQueue(const proto::ChunkLayout& layout, int64_t threads, LaneBuffers& buffers,
                     BlockWork& work, const PushBound& bound, const StepClip& clip)
    : layout_(layout),
      buffers_(buffers),
      work_(work),
      bound_(bound),
      clip_(clip),
      cursor_(static_cast<size_t>(layout.count()), 0) {
  // A model of one lane is too small to pay for waking threads.
  if (threads > 1 && layout_.count() > 1) pool_ = std::make_unique<ThreadPool>(threads);
}

LaneQueue::~LaneQueue() = default;

bool LaneQueue::ApplyPending() const {
  return std::any_of(ops_.begin(), ops_.end(),
                     [](const StoreOp& op) { return op.kind == StoreOp::Kind::kApply; });
}

void LaneQueue::Queue(StoreOp op) {
  op.remaining = static_cast<int64_t>(cursor_.size());
  if (op.remaining == 0) {
    // An empty model: nothing to wait for.
    if (op.snapshot_sink) op.snapshot_sink(op.point->values);
    if (op.done) op.done(true);
    return;
  }
  ops_.push_back(std::move(op));
  Advance();
}

void LaneQueue::Advance() {
  // A callback's own call (a norm report answered at once) leaves the
  // passes to the Advance under way, which passes again while lanes ran.
  if (advancing_) return;
  advancing_ = true;
  // An apply waits for its check on every lane, which a pass may complete
  // after passing lanes by: pass again while passes make progress.
  while (AdvancePass()) {
  }
  advancing_ = false;
  // Every lane runs the operations in order, so those at the front that all
  // lanes ran are done.
  while (!ops_.empty() && ops_.front().remaining == 0) {
    ops_.pop_front();
    ++first_op_;
  }
}

void LaneQueue::TakeGlobalSquares(int64_t step, double squares) {
  for (StoreOp& op : ops_) {
    if (op.kind != StoreOp::Kind::kVerify || op.verdict == nullptr || !op.verdict->shared ||
        op.verdict->step.number != step) {
      continue;
    }
    op.verdict->global_squares = squares;
    Advance();  // nothing when a callback of this store's answered at once
    return;
  }
}

bool LaneQueue::AdvancePass() {
  bool progressed = false;
  const auto lanes = static_cast<int64_t>(cursor_.size());
  if (pool_ == nullptr) {
    // Lanes in index order, each handed over before the next runs: a
    // reply's chunks go out as soon as each is there.
    if (runs_.empty()) runs_.resize(1);
    LaneRun& run = runs_.front();
    for (int64_t lane = 0; lane < lanes; ++lane) {
      if (!PlanLane(lane, &run)) continue;
      progressed = true;
      RunFloats(run, layout_.begin(run.lane), layout_.end(run.lane));
      FinishLane(run);
    }
  } else {
    // Every lane is planned, their float work is shared out block by block
    // over the threads, and then the lanes are handed over in index order
    // on this thread, as above.
    if (runs_.size() < static_cast<size_t>(lanes)) runs_.resize(static_cast<size_t>(lanes));
    size_t planned = 0;
    for (int64_t lane = 0; lane < lanes; ++lane) {
      if (PlanLane(lane, &runs_[planned])) ++planned;
    }
    progressed = planned > 0;
    struct Block {
      size_t run;
      int64_t from;
      int64_t to;
    };
    std::vector<Block> blocks;
    for (size_t r = 0; r < planned; ++r) {
      const LaneRun& run = runs_[r];
      if (!run.floats) continue;
      const int64_t end = layout_.end(run.lane);
      for (int64_t from = layout_.begin(run.lane); from < end; from += kStoreBlockFloats) {
        blocks.push_back({r, from, std::min(end, from + kStoreBlockFloats)});
      }
    }
    pool_->ParallelFor(static_cast<int64_t>(blocks.size()), [&](int64_t i) {
      const Block& block = blocks[static_cast<size_t>(i)];
      RunFloats(runs_[block.run], block.from, block.to);
    });
    for (size_t r = 0; r < planned; ++r) FinishLane(runs_[r]);
  }
  return progressed;
}

bool LaneQueue::PlanLane(int64_t lane, LaneRun* run) {
  int64_t& cursor = cursor_[static_cast<size_t>(lane)];
  const int64_t queued = first_op_ + static_cast<int64_t>(ops_.size());
  int64_t ready = cursor;
  while (ready < queued && Ready(At(ready), lane)) ++ready;
  if (ready == cursor) return false;
  run->lane = lane;
  run->first = cursor;
  run->ready = ready;
  run->floats = false;
  run->segments.clear();
  // The first snapshot of a model state makes the copy.
  run->fills.assign(static_cast<size_t>(ready - cursor), 0);
  for (int64_t at = cursor; at < ready; ++at) {
    StoreOp& op = At(at);
    if (op.floats()) run->floats = true;
    if (op.kind == StoreOp::Kind::kVerify && op.verdict->clip) clip_.Clip(*op.verdict);
    if (!op.bounded) bound_.Take(op);
    if (op.point != nullptr && !op.point->filled[static_cast<size_t>(lane)]) {
      op.point->filled[static_cast<size_t>(lane)] = 1;
      run->fills[static_cast<size_t>(at - cursor)] = 1;
      run->floats = true;
    }
  }
  cursor = ready;
  PlanSegments(run);
  return true;
}

void LaneQueue::PlanSegments(LaneRun* run) {
  const int64_t lane = run->lane;
  for (int64_t first = run->first; first < run->ready;) {
    // A segment ends with a Send: the reply views the lane as it stands
    // there, so an apply after it must not change that buffer in place.
    // An apply whose check computed its step out of place is a segment of
    // its own, on the buffer it swaps in.
    LaneRun::Segment segment;
    segment.first = first;
    int64_t last = first;
    bool applies = false;
    while (last < run->ready) {
      const StoreOp& op = At(last);
      if (op.kind == StoreOp::Kind::kApply && op.fused) {
        if (last == first) ++last;
        break;
      }
      ++last;
      applies = applies || op.kind == StoreOp::Kind::kApply;
      if (op.kind == StoreOp::Kind::kVerify && op.fused) segment.out = buffers_.Candidate(lane);
      if (op.kind == StoreOp::Kind::kSend) break;
    }
    segment.last = last;
    const StoreOp& head = At(first);
    if (head.kind == StoreOp::Kind::kApply && head.fused) {
      // The step is in the candidate: taken by swapping it in, the old
      // buffer (which replies may still view) becoming the next candidate.
      if (head.verdict->finite.load(std::memory_order_relaxed)) buffers_.SwapCandidate(lane);
    } else if (applies) {
      // The segments planned before hold their buffers, as the replies
      // made from them will: Unshare sees those as viewed.
      segment.copy_from = buffers_.Unshare(lane);
    }
    segment.params = buffers_.lane(lane);
    run->segments.push_back(std::move(segment));
    first = last;
  }
}

void LaneQueue::RunFloats(const LaneRun& run, int64_t from, int64_t to) {
  const int64_t begin = layout_.begin(run.lane);
  const int64_t end = layout_.end(run.lane);
  // The segments' operations run block by block, each block passing
  // through all of them while it is in cache: a lane's sum and apply then
  // cost about one trip through memory instead of one each.
  for (int64_t block = from; block < to; block += kStoreBlockFloats) {
    const int64_t block_end = std::min({to, end, block + kStoreBlockFloats});
    for (const LaneRun::Segment& segment : run.segments) {
      float* params = segment.params->data();
      if (segment.copy_from != nullptr) {
        std::memcpy(params + (block - begin), segment.copy_from->data() + (block - begin),
                    static_cast<size_t>(block_end - block) * sizeof(float));
      }
      float* out = segment.out != nullptr ? segment.out->data() : nullptr;
      for (int64_t at = segment.first; at < segment.last; ++at) {
        work_.Run(ops_[static_cast<size_t>(at - first_op_)], params, out, run.lane, block,
                  block_end, run.fills[static_cast<size_t>(at - run.first)] != 0);
      }
    }
  }
}

void LaneQueue::FinishLane(LaneRun& run) {
  for (const LaneRun::Segment& segment : run.segments) {
    for (int64_t at = segment.first; at < segment.last; ++at) Finish(at, run.lane, segment.params);
  }
  // Let go of the buffers: a lane that no reply views is changed in place.
  run.segments.clear();
}

bool LaneQueue::Ready(const StoreOp& op, int64_t lane) const {
  if (op.kind == StoreOp::Kind::kApply) return op.verdict->lanes_left == 0;
  // A clipped step needs the norm of the whole gradient: every slice's.
  if (op.kind == StoreOp::Kind::kVerify && op.verdict->clip) return StepClip::Known(*op.verdict);
  // A push's norm needs all of it.
  const bool whole = bound_.NeedsWhole(op);
  auto has = [&](const proto::IncomingTensor& push) {
    return push.settled() || (!whole && push.received() >= layout_.end(lane));
  };
  if (op.kind == StoreOp::Kind::kStage) return has(*op.push);
  if (op.kind == StoreOp::Kind::kCombine) {
    return std::all_of(op.pushes.begin(), op.pushes.end(),
                       [&](const auto& push) { return has(*push); });
  }
  return true;
}

void LaneQueue::Finish(int64_t at, int64_t lane,
                       const std::shared_ptr<std::vector<float>>& params) {
  Release(at, lane);
  StoreOp& op = At(at);
  if (op.kind == StoreOp::Kind::kSend) {
    net::Frames frames;
    proto::AppendRange(params, 0, layout_.end(lane) - layout_.begin(lane), &frames);
    op.HandOver(lane, std::move(frames[0]));
  }
  if (op.kind == StoreOp::Kind::kVerify) --op.verdict->lanes_left;
  if (op.kind == StoreOp::Kind::kNorm) clip_.Summed(*op.verdict);
  if (--op.remaining > 0) return;
  if (op.snapshot_sink) op.snapshot_sink(op.point->values);
  if (op.kind == StoreOp::Kind::kApply && op.done) {
    op.done(op.verdict->finite.load(std::memory_order_relaxed));
  }
  op.push.reset();  // the frames it holds are no longer needed
  op.pushes.clear();
}

void LaneQueue::Release(int64_t at, int64_t lane) {
  const StoreOp& op = At(at);
  const int64_t begin = layout_.begin(lane);
  const int64_t end = layout_.end(lane);
  if (op.kind == StoreOp::Kind::kStage && op.push->streamed()) {
    // Free this lane's frames unless a later Stage still needs them.
    bool needed = false;
    for (int64_t i = at + 1; i < first_op_ + static_cast<int64_t>(ops_.size()) && !needed; ++i) {
      needed = At(i).kind == StoreOp::Kind::kStage && At(i).push == op.push;
    }
    if (!needed) op.push->Release(begin, end);
  }
  if (op.kind == StoreOp::Kind::kCombine) {
    for (const auto& push : op.pushes) {
      if (push->streamed()) push->Release(begin, end);
    }
  }
}

}  // namespace dmlps::server
