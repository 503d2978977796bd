// What a ModelStore queues (model_store.h): one operation of the queue, the
// check an apply waits for, and the copy of the model a snapshot fills.
// Every lane runs every operation, each as soon as its data is there.
#ifndef DMLPS_SERVER_STORE_OPS_H_
#define DMLPS_SERVER_STORE_OPS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "dmlps/optim/optimizer.h"
#include "dmlps/proto/codec.h"
#include "server/aggregate.h"
#include "server/centered_clip.h"

namespace dmlps::server {

// Floats of a lane that pass through all ready operations at a time: a few
// such blocks of the accumulator, the model and the gradient fit in a
// core's L2 cache.
inline constexpr int64_t kStoreBlockFloats = 16 << 10;

// The model's state at one point of the queue, copied lane by lane.
struct ModelPoint {
  std::shared_ptr<std::vector<float>> values;
  std::vector<char> filled;  // per lane
};

// An apply's check over every lane, which the apply waits for.
struct StepVerdict {
  std::atomic<bool> finite{true};  // written by the lanes' threads
  int64_t lanes_left = 0;          // lanes yet to check; on the caller's thread
  optim::StepInfo step;            // the step checked and taken
  float state_scale = 0;           // 1 / the weights staged for it; 0: the state stays
  // Where the block of floats at `from` in lane `lane` keeps its sum of
  // squares in `squares`: distinct for every block of every lane.
  static size_t Slot(int64_t lane, int64_t from) {
    // A lane's blocks start kStoreBlockFloats apart from its first float,
    // so from / kStoreBlockFloats grows by one a block within a lane and by
    // at least zero from one lane's last block to the next lane's first:
    // adding the lane makes every slot distinct.
    return static_cast<size_t>(from / kStoreBlockFloats + lane);
  }

  // Clipped steps: each block's sum of squares of acc (kNorm, one slot a
  // block), the lanes yet to sum, and whether the gradient's scale was
  // clipped yet.
  bool clip = false;
  std::vector<double> squares;
  int64_t norm_lanes_left = 0;
  bool clipped = false;
  // Clipped across shards (StepClip's report): the whole model's sum of
  // squares, once ModelStore::TakeGlobalSquares gave it.
  bool shared = false;
  std::optional<double> global_squares;
};

struct StoreOp {
  // Takes one chunk of a reply: its index in the layout and a frame viewing
  // a snapshot of the model without copying. Called in index order.
  using ChunkSink = std::function<void(int64_t index, zmq::message_t frame)>;
  // Takes a whole snapshot of the model.
  using SnapshotSink = std::function<void(std::shared_ptr<const std::vector<float>> values)>;
  // Runs once an Apply is over: `applied` false when it was refused.
  using AppliedFn = std::function<void(bool applied)>;

  // kVerify checks the step of the kApply queued right after it.
  // kNorm sums the squares of acc for the clipped step of the kVerify after it.
  enum class Kind { kStage, kCombine, kNorm, kVerify, kApply, kSend, kSnapshot };

  // Whether the operation works on floats of the lane (the others hand
  // the lane over or copy it).
  bool floats() const {
    return kind == Kind::kStage || kind == Kind::kCombine || kind == Kind::kNorm ||
           kind == Kind::kVerify || kind == Kind::kApply;
  }
  // kSend: hands the chunk of `index` to the sink once every chunk before
  // it went, with whatever was held for its turn.
  void HandOver(int64_t index, zmq::message_t frame) {
    held.emplace(index, std::move(frame));
    for (auto it = held.begin(); it != held.end() && it->first == next_chunk; it = held.erase(it)) {
      chunk_sink(it->first, std::move(it->second));
      ++next_chunk;
    }
  }

  Kind kind = Kind::kStage;
  std::shared_ptr<proto::IncomingTensor> push;
  // kCombine: the pushes, each one's factor (its norm bound), the rule.
  std::vector<std::shared_ptr<proto::IncomingTensor>> pushes;
  std::vector<float> factors;
  Aggregation rule;
  // kCombine under centred clipping: the clipper, the pushes' workers,
  // and the round's centre over the parameters once PushBound ran it (a
  // copy: a lane ahead may run the next round before the others summed this).
  CenteredClip* clipper = nullptr;
  std::vector<int64_t> workers;  // one a push, with its weight
  std::vector<float> weights;
  std::vector<float> center;
  bool bounded = false;   // kStage, kCombine: the norm bound is taken
  float state_value = 0;  // kStage: the weight of the push's module state (never bounded)
  // kVerify, kApply: the step is computed out of place by the check into
  // the lane's candidate buffer, and the apply swaps that buffer in.
  bool fused = false;
  float value = 0;
  optim::Optimizer* optimizer = nullptr;
  std::shared_ptr<ModelPoint> point;
  std::shared_ptr<StepVerdict> verdict;  // kVerify, kApply
  ChunkSink chunk_sink;
  SnapshotSink snapshot_sink;
  AppliedFn done;
  int64_t remaining = 0;                   // lanes yet to run it
  int64_t next_chunk = 0;                  // kSend: the next index to hand to the sink
  std::map<int64_t, zmq::message_t> held;  // kSend: chunks ready before their turn
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_STORE_OPS_H_
