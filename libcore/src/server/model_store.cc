#include "server/model_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "dmlps/proto/digest.h"

namespace dmlps::server {

ModelStore::ModelStore(std::vector<float> params, int64_t lane_floats, int64_t threads)
    : layout_{static_cast<int64_t>(params.size()), std::max<int64_t>(lane_floats, 1)},
      buffers_(params, layout_),
      snapshots_(layout_.size, layout_.count()),
      work_(layout_),
      bound_(layout_.size),
      queue_(layout_, threads, buffers_, work_, bound_, clip_) {}

ModelStore::~ModelStore() = default;

void ModelStore::Stage(std::shared_ptr<proto::IncomingTensor> push, float weight) {
  StoreOp op;
  op.kind = StoreOp::Kind::kStage;
  op.push = std::move(push);
  op.value = weight;
  op.state_value = weight;
  staged_weight_ += weight;
  queue_.Queue(std::move(op));
}

void ModelStore::Combine(std::vector<std::shared_ptr<proto::IncomingTensor>> pushes,
                         std::vector<float> weights, const Aggregation& rule) {
  StoreOp op;
  op.kind = StoreOp::Kind::kCombine;
  op.factors.assign(pushes.size(), 1.f);
  op.pushes = std::move(pushes);
  op.rule = rule;
  for (const float w : weights) op.value += w;
  staged_weight_ += op.value;
  queue_.Queue(std::move(op));
}

void ModelStore::Combine(std::vector<std::shared_ptr<proto::IncomingTensor>> pushes,
                         std::vector<float> weights, CenteredClip& clipper,
                         std::vector<int64_t> workers) {
  StoreOp op;
  op.kind = StoreOp::Kind::kCombine;
  op.factors.assign(pushes.size(), 1.f);
  op.pushes = std::move(pushes);
  op.rule.rule = Aggregation::Rule::kCenteredClip;
  op.clipper = &clipper;
  op.workers = std::move(workers);
  for (const float w : weights) op.value += w;
  op.weights = std::move(weights);
  staged_weight_ += op.value;
  queue_.Queue(std::move(op));
}

void ModelStore::Apply(optim::Optimizer* optimizer, float scale, AppliedFn done) {
  auto verdict = std::make_shared<StepVerdict>();
  verdict->lanes_left = layout_.count();
  verdict->step = optim::BeginStep(optimizer, scale);
  verdict->state_scale = staged_weight_ > 0 ? static_cast<float>(1 / staged_weight_) : 0.f;
  staged_weight_ = 0;
  const bool fused = optim::StepsOutOfPlace(optimizer);
  if (optimizer != nullptr && clip_.on()) {
    clip_.Prepare(*verdict, layout_);
    StoreOp norm;
    norm.kind = StoreOp::Kind::kNorm;
    norm.verdict = verdict;
    queue_.Queue(std::move(norm));
  }
  StoreOp check;
  check.kind = StoreOp::Kind::kVerify;
  check.optimizer = optimizer;
  check.value = scale;
  check.verdict = verdict;
  check.fused = fused;
  queue_.Queue(std::move(check));
  StoreOp op;
  op.kind = StoreOp::Kind::kApply;
  op.fused = fused;
  op.verdict = std::move(verdict);
  op.optimizer = optimizer;
  op.value = scale;
  op.done = [this, done = std::move(done)](bool applied) {
    if (!applied) ++refused_;
    if (done) done(applied);
  };
  snapshots_.Changed();  // the model changes: later replies need a new copy
  queue_.Queue(std::move(op));
}

void ModelStore::Send(ChunkSink sink) {
  StoreOp op;
  op.kind = StoreOp::Kind::kSend;
  op.chunk_sink = std::move(sink);
  queue_.Queue(std::move(op));
}

void ModelStore::Snapshot(SnapshotSink sink) {
  StoreOp op;
  op.kind = StoreOp::Kind::kSnapshot;
  op.point = snapshots_.Current();
  op.snapshot_sink = std::move(sink);
  queue_.Queue(std::move(op));
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
