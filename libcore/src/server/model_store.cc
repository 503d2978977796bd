#include "server/model_store.h"

#include <spdlog/spdlog.h>

#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

#include "dmlps/proto/digest.h"

namespace dmlps::server {
namespace {

// Snapshot copies kept for reuse (the evaluator's few), since a fresh copy
// of a large model costs page faults.
constexpr size_t kMaxBuffers = 4;
// Floats of a lane that pass through all ready operations at a time: a few
// such blocks of the accumulator, the model and the gradient fit in a
// core's L2 cache.
constexpr int64_t kBlockFloats = 16 << 10;

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

ModelStore::ModelStore(std::vector<float> params, int64_t lane_floats, int64_t threads)
    : layout_{static_cast<int64_t>(params.size()), std::max<int64_t>(lane_floats, 1)},
      lanes_(static_cast<size_t>(layout_.count())),
      spares_(static_cast<size_t>(layout_.count())),
      candidates_(static_cast<size_t>(layout_.count())),
      accumulator_(params.size(), 0.f),
      cursor_(static_cast<size_t>(layout_.count()), 0) {
  for (int64_t lane = 0; lane < layout_.count(); ++lane) {
    lanes_[static_cast<size_t>(lane)] = std::make_shared<std::vector<float>>(
        params.begin() + layout_.begin(lane), params.begin() + layout_.end(lane));
  }
  // A model of one lane is too small to pay for waking threads.
  if (threads > 1 && layout_.count() > 1) pool_ = std::make_unique<ThreadPool>(threads);
}

ModelStore::~ModelStore() = default;

std::vector<float> ModelStore::Params() const {
  std::vector<float> params;
  params.reserve(static_cast<size_t>(layout_.size));
  for (const auto& lane : lanes_) params.insert(params.end(), lane->begin(), lane->end());
  return params;
}

std::shared_ptr<std::vector<float>> ModelStore::Buffer() {
  // A buffer only this store holds is free: no evaluation uses it.
  for (const std::shared_ptr<std::vector<float>>& b : buffers_) {
    if (SoleOwner(b)) return b;
  }
  auto fresh = std::make_shared<std::vector<float>>(static_cast<size_t>(layout_.size));
  if (buffers_.size() < kMaxBuffers) buffers_.push_back(fresh);
  return fresh;
}

std::shared_ptr<ModelStore::Point> ModelStore::CurrentPoint() {
  if (point_ == nullptr) {
    point_ = std::make_shared<Point>();
    point_->values = Buffer();
    point_->filled.assign(cursor_.size(), 0);
  }
  return point_;
}

void ModelStore::Stage(std::shared_ptr<proto::IncomingTensor> push, float weight) {
  Op op;
  op.kind = Op::Kind::kStage;
  op.push = std::move(push);
  op.value = weight;
  op.state_value = weight;
  staged_weight_ += weight;
  Queue(std::move(op));
}

void ModelStore::Combine(std::vector<std::shared_ptr<proto::IncomingTensor>> pushes,
                         std::vector<float> weights, const Aggregation& rule) {
  Op op;
  op.kind = Op::Kind::kCombine;
  op.factors.assign(pushes.size(), 1.f);
  op.pushes = std::move(pushes);
  op.rule = rule;
  for (const float w : weights) op.value += w;
  staged_weight_ += op.value;
  Queue(std::move(op));
}

void ModelStore::Combine(std::vector<std::shared_ptr<proto::IncomingTensor>> pushes,
                         std::vector<float> weights, CenteredClip& clipper,
                         std::vector<int64_t> workers) {
  Op op;
  op.kind = Op::Kind::kCombine;
  op.factors.assign(pushes.size(), 1.f);
  op.pushes = std::move(pushes);
  op.rule.rule = Aggregation::Rule::kCenteredClip;
  op.clipper = &clipper;
  op.workers = std::move(workers);
  for (const float w : weights) op.value += w;
  op.weights = std::move(weights);
  staged_weight_ += op.value;
  Queue(std::move(op));
}

void ModelStore::Apply(optim::Optimizer* optimizer, float scale, AppliedFn done) {
  auto verdict = std::make_shared<Verdict>();
  verdict->lanes_left = layout_.count();
  verdict->step = optim::BeginStep(optimizer, scale);
  verdict->state_scale = staged_weight_ > 0 ? static_cast<float>(1 / staged_weight_) : 0.f;
  staged_weight_ = 0;
  const bool fused = optim::StepsOutOfPlace(optimizer);
  if (optimizer != nullptr && clip_norm_ > 0) {
    verdict->clip = true;
    verdict->shared = static_cast<bool>(norm_report_);
    verdict->norm_lanes_left = layout_.count();
    verdict->squares.assign(NormSlot(layout_.count(), layout_.size) + 1, 0.0);
    Op norm;
    norm.kind = Op::Kind::kNorm;
    norm.verdict = verdict;
    Queue(std::move(norm));
  }
  Op check;
  check.kind = Op::Kind::kVerify;
  check.optimizer = optimizer;
  check.value = scale;
  check.verdict = verdict;
  check.fused = fused;
  Queue(std::move(check));
  Op op;
  op.kind = Op::Kind::kApply;
  op.fused = fused;
  op.verdict = std::move(verdict);
  op.optimizer = optimizer;
  op.value = scale;
  op.done = std::move(done);
  point_ = nullptr;  // the model changes: later replies need a new copy
  Queue(std::move(op));
}

void ModelStore::Send(ChunkSink sink) {
  Op op;
  op.kind = Op::Kind::kSend;
  op.chunk_sink = std::move(sink);
  Queue(std::move(op));
}

void ModelStore::Snapshot(SnapshotSink sink) {
  Op op;
  op.kind = Op::Kind::kSnapshot;
  op.point = CurrentPoint();
  op.snapshot_sink = std::move(sink);
  Queue(std::move(op));
}

void ModelStore::Queue(Op op) {
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

void ModelStore::Advance() {
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

bool ModelStore::AdvancePass() {
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
      for (int64_t from = layout_.begin(run.lane); from < end; from += kBlockFloats) {
        blocks.push_back({r, from, std::min(end, from + kBlockFloats)});
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

bool ModelStore::PlanLane(int64_t lane, LaneRun* run) {
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
    Op& op = At(at);
    if (op.kind == Op::Kind::kStage || op.kind == Op::Kind::kCombine ||
        op.kind == Op::Kind::kNorm || op.kind == Op::Kind::kVerify || op.kind == Op::Kind::kApply) {
      run->floats = true;
    }
    if (op.kind == Op::Kind::kVerify && op.verdict->clip) Clip(*op.verdict);
    if (!op.bounded) Bound(op);
    if (op.point != nullptr && !op.point->filled[static_cast<size_t>(lane)]) {
      op.point->filled[static_cast<size_t>(lane)] = 1;
      run->fills[static_cast<size_t>(at - cursor)] = 1;
      run->floats = true;
    }
  }
  for (int64_t first = cursor; first < ready;) {
    // A segment ends with a Send: the reply views the lane as it stands
    // there, so an apply after it must not change that buffer in place.
    // An apply whose check computed its step out of place is a segment of
    // its own, on the buffer it swaps in.
    LaneRun::Segment segment;
    segment.first = first;
    int64_t last = first;
    bool applies = false;
    while (last < ready) {
      const Op& op = At(last);
      if (op.kind == Op::Kind::kApply && op.fused) {
        if (last == first) ++last;
        break;
      }
      ++last;
      applies = applies || op.kind == Op::Kind::kApply;
      if (op.kind == Op::Kind::kVerify && op.fused) segment.out = Candidate(lane);
      if (op.kind == Op::Kind::kSend) break;
    }
    segment.last = last;
    const Op& head = At(first);
    if (head.kind == Op::Kind::kApply && head.fused) {
      // The step is in the candidate: taken by swapping it in, the old
      // buffer (which replies may still view) becoming the next candidate.
      if (head.verdict->finite.load(std::memory_order_relaxed)) {
        std::swap(lanes_[static_cast<size_t>(lane)], candidates_[static_cast<size_t>(lane)]);
      }
    } else if (applies) {
      // The segments planned before hold their buffers, as the replies
      // made from them will: Unshare sees those as viewed.
      segment.copy_from = Unshare(lane);
    }
    segment.params = lanes_[static_cast<size_t>(lane)];
    run->segments.push_back(std::move(segment));
    first = last;
  }
  cursor = ready;
  return true;
}

void ModelStore::RunFloats(const LaneRun& run, int64_t from, int64_t to) {
  const int64_t begin = layout_.begin(run.lane);
  const int64_t end = layout_.end(run.lane);
  // The segments' operations run block by block, each block passing
  // through all of them while it is in cache: a lane's sum and apply then
  // cost about one trip through memory instead of one each.
  for (int64_t block = from; block < to; block += kBlockFloats) {
    const int64_t block_end = std::min({to, end, block + kBlockFloats});
    for (const LaneRun::Segment& segment : run.segments) {
      float* params = segment.params->data();
      if (segment.copy_from != nullptr) {
        std::memcpy(params + (block - begin), segment.copy_from->data() + (block - begin),
                    static_cast<size_t>(block_end - block) * sizeof(float));
      }
      float* out = segment.out != nullptr ? segment.out->data() : nullptr;
      for (int64_t at = segment.first; at < segment.last; ++at) {
        RunBlock(ops_[static_cast<size_t>(at - first_op_)], params, out, run.lane, block, block_end,
                 run.fills[static_cast<size_t>(at - run.first)] != 0);
      }
    }
  }
}

void ModelStore::FinishLane(LaneRun& run) {
  for (const LaneRun::Segment& segment : run.segments) {
    for (int64_t at = segment.first; at < segment.last; ++at) Finish(at, run.lane, segment.params);
  }
  // Let go of the buffers: a lane that no reply views is changed in place.
  run.segments.clear();
}

std::shared_ptr<std::vector<float>> ModelStore::Candidate(int64_t lane) {
  std::shared_ptr<std::vector<float>>& candidate = candidates_[static_cast<size_t>(lane)];
  if (candidate == nullptr || !SoleOwner(candidate)) {
    candidate = std::make_shared<std::vector<float>>(lanes_[static_cast<size_t>(lane)]->size());
  }
  return candidate;
}

std::shared_ptr<std::vector<float>> ModelStore::Unshare(int64_t lane) {
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

bool ModelStore::Ready(const Op& op, int64_t lane) const {
  if (op.kind == Op::Kind::kApply) return op.verdict->lanes_left == 0;
  // A clipped step needs the norm of the whole gradient: every slice's.
  if (op.kind == Op::Kind::kVerify && op.verdict->clip) {
    return op.verdict->norm_lanes_left == 0 &&
           (!op.verdict->shared || op.verdict->global_squares.has_value());
  }
  // A push's norm needs all of it.
  const bool whole = max_norm_ > 0 || op.clipper != nullptr;
  auto has = [&](const proto::IncomingTensor& push) {
    return push.settled() || (!whole && push.received() >= layout_.end(lane));
  };
  if (op.kind == Op::Kind::kStage) return has(*op.push);
  if (op.kind == Op::Kind::kCombine) {
    return std::all_of(op.pushes.begin(), op.pushes.end(),
                       [&](const auto& push) { return has(*push); });
  }
  return true;
}

size_t ModelStore::NormSlot(int64_t lane, int64_t from) {
  // A lane's blocks start kBlockFloats apart from its first float, so
  // from / kBlockFloats grows by one a block within a lane and by at least
  // zero from one lane's last block to the next lane's first: adding the
  // lane makes every slot distinct.
  return static_cast<size_t>(from / kBlockFloats + lane);
}

void ModelStore::Clip(Verdict& verdict) const {
  if (verdict.clipped) return;
  verdict.clipped = true;
  // Summed in slot order: the same norm whatever the threads did.
  double squares = 0;
  for (const double s : verdict.squares) squares += s;
  if (verdict.shared) squares = *verdict.global_squares;
  const double norm = std::abs(static_cast<double>(verdict.step.scale)) * std::sqrt(squares);
  const double factor = clip_norm_ / (norm + 1e-6);
  if (factor < 1) verdict.step.scale = static_cast<float>(verdict.step.scale * factor);
}

void ModelStore::TakeGlobalSquares(int64_t step, double squares) {
  for (Op& op : ops_) {
    if (op.kind != Op::Kind::kVerify || op.verdict == nullptr || !op.verdict->shared ||
        op.verdict->step.number != step) {
      continue;
    }
    op.verdict->global_squares = squares;
    Advance();  // nothing when a callback of this store's answered at once
    return;
  }
}

void ModelStore::Bound(Op& op) const {
  op.bounded = true;
  if (max_norm_ <= 0) {
    if (op.clipper != nullptr) ClipRound(op);
    return;
  }
  auto factor = [this](const proto::IncomingTensor& push) {
    double squares = 0;
    const int64_t params = std::min(push.size(), state_begin_);
    push.ForEachIn(0, params, [&](int64_t, const proto::IncomingTensor::ConstMap& g) {
      squares += g.cast<double>().squaredNorm();
    });
    const double norm = std::sqrt(squares);
    return norm > max_norm_ ? static_cast<float>(max_norm_ / norm) : 1.f;
  };
  if (op.kind == Op::Kind::kStage) op.value *= factor(*op.push);
  if (op.kind == Op::Kind::kCombine) {
    for (size_t k = 0; k < op.pushes.size(); ++k) op.factors[k] = factor(*op.pushes[k]);
  }
  if (op.clipper != nullptr) ClipRound(op);
}

void ModelStore::ClipRound(Op& op) const {
  // The parameters only: module state takes the median (RunCombine).
  const auto params = static_cast<size_t>(std::min(layout_.size, state_begin_));
  // One gradient a worker: the weighted mean of its pushes of the round
  // (A-BSP's chunks, token scheduling's tokens), value by value.
  std::vector<int64_t> workers;
  std::vector<std::vector<double>> sums;
  std::vector<std::vector<double>> weights;
  for (size_t k = 0; k < op.pushes.size(); ++k) {
    const auto at = static_cast<size_t>(std::find(workers.begin(), workers.end(), op.workers[k]) -
                                        workers.begin());
    if (at == workers.size()) {
      workers.push_back(op.workers[k]);
      sums.emplace_back(params, 0.0);
      weights.emplace_back(params, 0.0);
    }
    const double weight = op.weights[k];
    const double factor = op.factors[k];
    op.pushes[k]->ForEachIn(0, static_cast<int64_t>(params),
                            [&](int64_t offset, const proto::IncomingTensor::ConstMap& g) {
                              for (Eigen::Index i = 0; i < g.size(); ++i) {
                                const auto to = static_cast<size_t>(offset + i);
                                sums[at][to] += weight * factor * double{g[i]};
                                weights[at][to] += weight;
                              }
                            });
  }
  std::vector<std::vector<float>> values(workers.size());
  for (size_t w = 0; w < workers.size(); ++w) {
    values[w].assign(params, std::numeric_limits<float>::quiet_NaN());  // left out
    for (size_t i = 0; i < params; ++i) {
      if (weights[w][i] > 0) values[w][i] = static_cast<float>(sums[w][i] / weights[w][i]);
    }
  }
  const std::span<const float> center = op.clipper->Round(workers, values);
  op.center.assign(center.begin(), center.end());
}

void ModelStore::RunCombine(const Op& op, int64_t from, int64_t to, bool state) {
  if (op.clipper != nullptr && !state) {
    // The round's centre, computed whole by ClipRound.
    for (int64_t i = from; i < to; ++i) {
      accumulator_[static_cast<size_t>(i)] += op.value * op.center[static_cast<size_t>(i)];
    }
    return;
  }
  const auto k = op.pushes.size();
  const auto n = static_cast<size_t>(to - from);
  // Row p holds push p's values; NaN marks one left out (the values taken
  // are all finite).
  std::vector<float> rows(k * n, std::numeric_limits<float>::quiet_NaN());
  for (size_t p = 0; p < k; ++p) {
    const float factor = state ? 1.f : op.factors[p];
    op.pushes[p]->ForEachIn(
        from, to, [&](int64_t offset, const proto::IncomingTensor::ConstMap& g) {
          Eigen::Map<Eigen::VectorXf>(rows.data() + p * n + static_cast<size_t>(offset - from),
                                      g.size()) = factor * g;
        });
  }
  std::vector<float> column(k);
  for (size_t i = 0; i < n; ++i) {
    size_t have = 0;
    for (size_t p = 0; p < k; ++p) {
      const float v = rows[p * n + i];
      if (!std::isnan(v)) column[have++] = v;
    }
    if (have == 0) continue;
    accumulator_[static_cast<size_t>(from) + i] +=
        op.value * AggregateValues(std::span<float>(column.data(), have), op.rule);
  }
}

void ModelStore::RunBlock(const Op& op, float* lane_params, float* lane_out, int64_t lane,
                          int64_t from, int64_t to, bool fill) {
  // Module state, from state_begin_ on, is averaged rather than stepped.
  const bool splits = op.kind == Op::Kind::kStage || op.kind == Op::Kind::kCombine ||
                      op.kind == Op::Kind::kNorm || op.kind == Op::Kind::kVerify ||
                      op.kind == Op::Kind::kApply;
  const int64_t split = std::clamp(state_begin_, from, to);
  if (!splits || split == to) {
    RunParamBlock(op, lane_params, lane_out, lane, from, to, fill);
    return;
  }
  if (split > from) RunParamBlock(op, lane_params, lane_out, lane, from, split, fill);
  RunStateBlock(op, lane_params, lane_out, lane, split, to);
}

void ModelStore::RunStateBlock(const Op& op, float* lane_params, float* lane_out, int64_t lane,
                               int64_t from, int64_t to) {
  using Vec = Eigen::Map<Eigen::VectorXf>;
  const auto n = static_cast<Eigen::Index>(to - from);
  const int64_t at = from - layout_.begin(lane);
  Vec acc(accumulator_.data() + from, n);
  switch (op.kind) {
    case Op::Kind::kStage:
      op.push->ForEachIn(from, to, [&](int64_t offset, const proto::IncomingTensor::ConstMap& g) {
        Vec(accumulator_.data() + offset, g.size()) += op.state_value * g;
      });
      break;
    case Op::Kind::kCombine:
      RunCombine(op, from, to, /*state=*/true);
      break;
    case Op::Kind::kVerify: {
      const float scale = op.verdict->state_scale;
      bool finite = true;
      if (op.fused) {
        Vec out(lane_out + at, n);
        if (scale > 0) {
          out = scale * acc;
        } else {
          out = Vec(lane_params + at, n);
        }
        finite = (out.array() * 0.f).sum() == 0.f;
      } else if (scale > 0) {
        finite = ((scale * acc).array() * 0.f).sum() == 0.f;
      }
      if (!finite) op.verdict->finite.store(false, std::memory_order_relaxed);
      break;
    }
    case Op::Kind::kApply:
      if (!op.fused && op.verdict->state_scale > 0 &&
          op.verdict->finite.load(std::memory_order_relaxed)) {
        Vec(lane_params + at, n) = op.verdict->state_scale * acc;
      }
      acc.setZero();  // the fused step's state is in the candidate already
      break;
    default:
      break;  // kNorm: the norm is the parameters'
  }
}

void ModelStore::RunParamBlock(const Op& op, float* lane_params, float* lane_out, int64_t lane,
                               int64_t from, int64_t to, bool fill) {
  const auto n = static_cast<size_t>(to - from);
  float* params = lane_params + (from - layout_.begin(lane));
  std::span<float> acc(accumulator_.data() + from, n);
  switch (op.kind) {
    case Op::Kind::kStage: {
      const float weight = op.value;
      op.push->ForEachIn(from, to, [&](int64_t offset, const proto::IncomingTensor::ConstMap& g) {
        Eigen::Map<Eigen::VectorXf>(accumulator_.data() + offset, g.size()) += weight * g;
      });
      break;
    }
    case Op::Kind::kCombine:
      RunCombine(op, from, to);
      break;
    case Op::Kind::kNorm:
      op.verdict->squares[NormSlot(lane, from)] =
          Eigen::Map<const Eigen::VectorXf>(acc.data(), static_cast<Eigen::Index>(n))
              .cast<double>()
              .squaredNorm();
      break;
    case Op::Kind::kVerify: {
      const std::span<const float> now(params, n);
      const optim::StepInfo& step = op.verdict->step;
      const bool finite =
          op.fused ? optim::StepAccumulatedOutOfPlace(
                         op.optimizer, step, now, acc,
                         std::span<float>(lane_out + (from - layout_.begin(lane)), n), from)
                   : optim::AccumulatedStaysFinite(op.optimizer, step, now, acc, from);
      if (!finite) op.verdict->finite.store(false, std::memory_order_relaxed);
      break;
    }
    case Op::Kind::kApply:
      if (op.fused) {
        // The step was computed by the check; its parameters are swapped in.
        if (op.verdict->finite.load(std::memory_order_relaxed)) {
          optim::TakeAccumulated(op.optimizer, acc, from);
        } else if (op.optimizer != nullptr && op.optimizer->KeepsState()) {
          std::fill(acc.begin(), acc.end(), 0.f);  // refused: the state computed is dropped
        }
      } else if (op.verdict->finite.load(std::memory_order_relaxed)) {
        optim::ApplyAccumulated(op.optimizer, op.verdict->step, std::span<float>(params, n),
                                std::span<float>(accumulator_.data() + from, n), from);
      } else {
        std::fill_n(accumulator_.data() + from, n, 0.f);  // refused: the sum is dropped
      }
      break;
    case Op::Kind::kSnapshot:
      if (fill) std::memcpy(op.point->values->data() + from, params, n * sizeof(float));
      break;
    case Op::Kind::kSend:
      break;  // sent from the lane itself in Finish
  }
}

void ModelStore::Finish(int64_t at, int64_t lane,
                        const std::shared_ptr<std::vector<float>>& params) {
  Op& op = At(at);
  const int64_t begin = layout_.begin(lane);
  const int64_t end = layout_.end(lane);
  if (op.kind == Op::Kind::kStage && op.push->streamed()) {
    // Free this lane's frames unless a later Stage still needs them.
    bool needed = false;
    for (int64_t i = at + 1; i < first_op_ + static_cast<int64_t>(ops_.size()) && !needed; ++i) {
      needed = At(i).kind == Op::Kind::kStage && At(i).push == op.push;
    }
    if (!needed) op.push->Release(begin, end);
  }
  if (op.kind == Op::Kind::kCombine) {
    for (const auto& push : op.pushes) {
      if (push->streamed()) push->Release(begin, end);
    }
  }
  if (op.kind == Op::Kind::kSend) {
    net::Frames frames;
    proto::AppendRange(params, 0, end - begin, &frames);
    op.held.emplace(lane, std::move(frames[0]));
    // Hand over in index order whatever is ready.
    for (auto it = op.held.begin(); it != op.held.end() && it->first == op.next_chunk;
         it = op.held.erase(it)) {
      op.chunk_sink(it->first, std::move(it->second));
      ++op.next_chunk;
    }
  }
  if (op.kind == Op::Kind::kVerify) --op.verdict->lanes_left;
  if (op.kind == Op::Kind::kNorm && --op.verdict->norm_lanes_left == 0 && op.verdict->shared) {
    double squares = 0;  // in slot order, as Clip sums
    for (const double s : op.verdict->squares) squares += s;
    norm_report_(op.verdict->step.number, squares);
  }
  if (--op.remaining > 0) return;
  if (op.snapshot_sink) op.snapshot_sink(op.point->values);
  if (op.kind == Op::Kind::kApply) {
    const bool applied = op.verdict->finite.load(std::memory_order_relaxed);
    if (!applied) ++refused_;
    if (op.done) op.done(applied);
  }
  op.push.reset();  // the frames it holds are no longer needed
  op.pushes.clear();
}

Result<bool> TakeChunk(proto::IncomingTensor& push, int64_t index, net::Frames& payload) {
  const int64_t begin = push.received();
  DMLPS_RETURN_IF_ERROR(push.Add(index, payload));
  if (push.AllFinite(begin, push.received())) return true;
  push.Exclude(begin, push.received());
  return false;
}

void QueueModelReply(ModelStore& store, net::Endpoint& endpoint, const zmq::message_t* identity,
                     proto::Model header, const std::string& who,
                     std::function<void(const Status&)> failed, bool digest) {
  const proto::ChunkLayout& layout = store.layout();
  header.num_params = store.size();
  // The identity frame, kept as bytes for the sends to come.
  auto peer = std::make_shared<std::string>();
  if (identity != nullptr)
    peer->assign(static_cast<const char*>(identity->data()), identity->size());
  const bool routed = identity != nullptr;
  // After one failed send the rest of the reply would be of no use.
  auto broken = std::make_shared<bool>(false);
  auto send = [&endpoint, peer, routed, who, broken, failed](const proto::Body& body,
                                                             net::Frames payload) {
    if (*broken) return;
    zmq::message_t id(peer->data(), peer->size());
    Status sent = endpoint.SendMessage(routed ? &id : nullptr, body, std::move(payload));
    if (sent.ok()) return;
    *broken = true;
    spdlog::warn("cannot send the model to {}: {}", who, sent.ToString());
    if (failed) failed(sent);
  };
  // Digested as it goes out, piece by piece in order (ModelDigest).
  auto digested = digest ? std::make_shared<proto::ModelDigest>() : nullptr;
  auto log_digest = [who, version = header.version](const proto::ModelDigest& d) {
    spdlog::info("sent {} version {} of the model, digest {:016x}", who, version, d.value());
  };
  if (!layout.streamed()) {
    header.chunks = 0;
    header.chunk_floats = 0;
    store.Send([send, header, digested, log_digest](int64_t, zmq::message_t frame) mutable {
      if (digested) {
        digested->AddBytes(frame.data(), frame.size());
        header.digest = digested->value();
        log_digest(*digested);
      }
      net::Frames payload;
      payload.push_back(std::move(frame));
      send(header, std::move(payload));
    });
    return;
  }
  header.chunks = layout.count();
  header.chunk_floats = layout.chunk_floats;
  send(header, {});
  store.Send(
      [send, digested, log_digest, last = layout.count() - 1](int64_t index, zmq::message_t frame) {
        proto::Chunk chunk{index};
        if (digested) {
          digested->AddBytes(frame.data(), frame.size());
          if (index == last) {
            chunk.digest = digested->value();
            log_digest(*digested);
          }
        }
        net::Frames payload;
        payload.push_back(std::move(frame));
        send(chunk, std::move(payload));
      });
}

}  // namespace dmlps::server
