#include "dmlps/server/model_store.h"

#include <spdlog/spdlog.h>

#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <cstring>

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

ModelStore::ModelStore(std::vector<float> params, int64_t lane_floats)
    : layout_{static_cast<int64_t>(params.size()), std::max<int64_t>(lane_floats, 1)},
      lanes_(static_cast<size_t>(layout_.count())),
      spares_(static_cast<size_t>(layout_.count())),
      accumulator_(params.size(), 0.f),
      cursor_(static_cast<size_t>(layout_.count()), 0) {
  for (int64_t lane = 0; lane < layout_.count(); ++lane) {
    lanes_[static_cast<size_t>(lane)] = std::make_shared<std::vector<float>>(
        params.begin() + layout_.begin(lane), params.begin() + layout_.end(lane));
  }
}

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
  Queue(std::move(op));
}

void ModelStore::Apply(optim::Optimizer* optimizer, float scale, std::function<void()> done) {
  Op op;
  op.kind = Op::Kind::kApply;
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
    if (op.done) op.done();
    return;
  }
  ops_.push_back(std::move(op));
  Advance();
}

void ModelStore::Advance() {
  // Lanes in index order: a reply's chunks then tend to be ready in order.
  for (int64_t lane = 0; lane < static_cast<int64_t>(cursor_.size()); ++lane) RunLane(lane);
  // Every lane runs the operations in order, so those at the front that all
  // lanes ran are done.
  while (!ops_.empty() && ops_.front().remaining == 0) {
    ops_.pop_front();
    ++first_op_;
  }
}

void ModelStore::RunLane(int64_t lane) {
  int64_t& cursor = cursor_[static_cast<size_t>(lane)];
  const int64_t queued = first_op_ + static_cast<int64_t>(ops_.size());
  int64_t ready = cursor;
  while (ready < queued && Ready(At(ready), lane)) ++ready;
  if (ready == cursor) return;
  // The first snapshot of a model state makes the copy.
  std::vector<char> fills(static_cast<size_t>(ready - cursor), 0);
  for (int64_t at = cursor; at < ready; ++at) {
    Op& op = At(at);
    if (op.point != nullptr && !op.point->filled[static_cast<size_t>(lane)]) {
      op.point->filled[static_cast<size_t>(lane)] = 1;
      fills[static_cast<size_t>(at - cursor)] = 1;
    }
  }
  const int64_t begin = layout_.begin(lane);
  const int64_t end = layout_.end(lane);
  for (int64_t first = cursor; first < ready;) {
    // A segment ends with a Send: the reply views the lane as it stands
    // there, so an apply after it must not change that buffer in place.
    int64_t last = first;
    bool applies = false;
    while (last < ready) {
      const Op::Kind kind = At(last++).kind;
      applies = applies || kind == Op::Kind::kApply;
      if (kind == Op::Kind::kSend) break;
    }
    if (applies) Unshare(lane);
    // The segment's operations run block by block, each block passing
    // through all of them while it is in cache: a lane's sum and apply then
    // cost about one trip through memory instead of one each.
    for (int64_t from = begin; from < end; from += kBlockFloats) {
      const int64_t to = std::min(end, from + kBlockFloats);
      for (int64_t at = first; at < last; ++at) {
        RunBlock(At(at), lane, from, to, fills[static_cast<size_t>(at - cursor)] != 0);
      }
    }
    for (int64_t at = first; at < last; ++at) Finish(at, lane);
    first = last;
  }
  cursor = ready;
}

void ModelStore::Unshare(int64_t lane) {
  std::shared_ptr<std::vector<float>>& current = lanes_[static_cast<size_t>(lane)];
  if (SoleOwner(current)) return;  // no frame views it: change it in place
  std::shared_ptr<std::vector<float>>& spare = spares_[static_cast<size_t>(lane)];
  std::shared_ptr<std::vector<float>> fresh =
      spare != nullptr && SoleOwner(spare) ? spare
                                           : std::make_shared<std::vector<float>>(current->size());
  std::memcpy(fresh->data(), current->data(), current->size() * sizeof(float));
  spare = std::move(current);
  current = std::move(fresh);
}

bool ModelStore::Ready(const Op& op, int64_t lane) const {
  if (op.kind != Op::Kind::kStage) return true;
  return op.push->settled() || op.push->received() >= layout_.end(lane);
}

void ModelStore::RunBlock(Op& op, int64_t lane, int64_t from, int64_t to, bool fill) {
  const auto n = static_cast<size_t>(to - from);
  float* params = lanes_[static_cast<size_t>(lane)]->data() + (from - layout_.begin(lane));
  switch (op.kind) {
    case Op::Kind::kStage: {
      const float weight = op.value;
      op.push->ForEachIn(from, to, [&](int64_t offset, const proto::IncomingTensor::ConstMap& g) {
        Eigen::Map<Eigen::VectorXf>(accumulator_.data() + offset, g.size()) += weight * g;
      });
      break;
    }
    case Op::Kind::kApply:
      optim::ApplyAccumulated(op.optimizer, op.value, std::span<float>(params, n),
                              std::span<float>(accumulator_.data() + from, n), from);
      break;
    case Op::Kind::kSnapshot:
      if (fill) std::memcpy(op.point->values->data() + from, params, n * sizeof(float));
      break;
    case Op::Kind::kSend:
      break;  // sent from the lane itself in Finish
  }
}

void ModelStore::Finish(int64_t at, int64_t lane) {
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
  if (op.kind == Op::Kind::kSend) {
    net::Frames frames;
    proto::AppendRange(lanes_[static_cast<size_t>(lane)], 0, end - begin, &frames);
    op.held.emplace(lane, std::move(frames[0]));
    // Hand over in index order whatever is ready.
    for (auto it = op.held.begin(); it != op.held.end() && it->first == op.next_chunk;
         it = op.held.erase(it)) {
      op.chunk_sink(it->first, std::move(it->second));
      ++op.next_chunk;
    }
  }
  if (--op.remaining > 0) return;
  if (op.snapshot_sink) op.snapshot_sink(op.point->values);
  if (op.done) op.done();
  op.push.reset();  // the frames it holds are no longer needed
}

Result<bool> TakeChunk(proto::IncomingTensor& push, int64_t index, net::Frames& payload) {
  const int64_t begin = push.received();
  DMLPS_RETURN_IF_ERROR(push.Add(index, payload));
  if (push.AllFinite(begin, push.received())) return true;
  push.Exclude(begin, push.received());
  return false;
}

void QueueModelReply(ModelStore& store, net::Endpoint& endpoint, const zmq::message_t* identity,
                     proto::Model header, const std::string& who) {
  const proto::ChunkLayout& layout = store.layout();
  header.num_params = store.size();
  // The identity frame, kept as bytes for the sends to come.
  auto peer = std::make_shared<std::string>();
  if (identity != nullptr) peer->assign(static_cast<const char*>(identity->data()), identity->size());
  const bool routed = identity != nullptr;
  auto send = [&endpoint, peer, routed, who](const proto::Body& body, net::Frames payload) {
    zmq::message_t id(peer->data(), peer->size());
    Status sent = endpoint.SendMessage(routed ? &id : nullptr, body, std::move(payload));
    if (!sent.ok()) spdlog::warn("cannot send the model to {}: {}", who, sent.ToString());
  };
  if (!layout.streamed()) {
    header.chunks = 0;
    header.chunk_floats = 0;
    store.Send([send, header](int64_t, zmq::message_t frame) {
      net::Frames payload;
      payload.push_back(std::move(frame));
      send(header, std::move(payload));
    });
    return;
  }
  header.chunks = layout.count();
  header.chunk_floats = layout.chunk_floats;
  send(header, {});
  store.Send([send](int64_t index, zmq::message_t frame) {
    net::Frames payload;
    payload.push_back(std::move(frame));
    send(proto::Chunk{index}, std::move(payload));
  });
}

}  // namespace dmlps::server
