// The server's model and gradient accumulator, worked on lane by lane so that
// streamed payloads pipeline: a push is summed chunk by chunk while its later
// chunks are still on the wire, and a reply sends each chunk of the model as
// soon as that chunk's update is applied.
#ifndef DMLPS_SERVER_MODEL_STORE_H_
#define DMLPS_SERVER_MODEL_STORE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "dmlps/net/endpoint.h"
#include "dmlps/optim/optimizer.h"
#include "dmlps/proto/codec.h"

namespace dmlps::server {

// The model cut into lanes of a fixed number of floats (the chunks of its
// replies). What the server does to the model is queued as operations; every
// lane runs every operation in the order queued, each as soon as the data it
// needs is there, so the end result is that of running them one after the
// other over the whole model. Single-threaded: all calls, and the callbacks
// they make, happen on the caller's thread; callbacks must not call the store.
class ModelStore {
 public:
  // Takes one chunk of a reply: its index in layout() and a frame viewing a
  // snapshot of the model without copying. Called in index order.
  using ChunkSink = std::function<void(int64_t index, zmq::message_t frame)>;
  // Takes a whole snapshot of the model.
  using SnapshotSink = std::function<void(std::shared_ptr<const std::vector<float>> values)>;

  // A model holding `params`, in lanes of `lane_floats` floats (at least 1).
  ModelStore(std::vector<float> params, int64_t lane_floats);

  const proto::ChunkLayout& layout() const { return layout_; }
  int64_t size() const { return layout_.size; }

  // Queues acc += weight * push, over the values of `push` that are not left
  // out; a lane runs it once push holds that lane's floats or is closed. A
  // streamed push's frames are freed as soon as the last Stage queued for it
  // has summed them, so a large push never holds all its memory at once.
  void Stage(std::shared_ptr<proto::IncomingTensor> push, float weight);
  // Queues optim::ApplyAccumulated(optimizer, scale, params, acc): one
  // optimizer step along scale * acc, or params += scale * acc without one;
  // then acc = 0. `done`, when given, runs once every lane has applied.
  void Apply(optim::Optimizer* optimizer, float scale, std::function<void()> done = {});
  // Queues sending the model as it stands after the operations queued
  // before: sink gets each chunk once its lane is there. The chunks view the
  // lanes without copying; a lane still being sent from is copied before it
  // changes (copy on write).
  void Send(ChunkSink sink);
  // Queues a snapshot of the model as it stands after the operations queued
  // before: sink gets it once every lane is there. Snapshots of the same
  // state share one copy.
  void Snapshot(SnapshotSink sink);

  // Runs whatever the data that arrived allows. Queuing runs at once what it
  // can; call this after adding chunks to a push that Stage took, or after
  // closing it.
  void Advance();

  // Operations not yet run by every lane.
  int64_t pending() const { return static_cast<int64_t>(ops_.size()); }
  // Whether an Apply queued has yet to run on some lane: until it has, the
  // model and the optimizer's state may stand at different updates lane by
  // lane.
  bool ApplyPending() const {
    for (const Op& op : ops_) {
      if (op.kind == Op::Kind::kApply) return true;
    }
    return false;
  }
  // A copy of the model where every lane stands now (for tests).
  std::vector<float> Params() const;

 private:
  // The model's state at one point of the queue, copied lane by lane.
  struct Point {
    std::shared_ptr<std::vector<float>> values;
    std::vector<char> filled;  // per lane
  };
  struct Op {
    enum class Kind { kStage, kApply, kSend, kSnapshot };
    Kind kind = Kind::kStage;
    std::shared_ptr<proto::IncomingTensor> push;
    float value = 0;
    optim::Optimizer* optimizer = nullptr;
    std::shared_ptr<Point> point;
    ChunkSink chunk_sink;
    SnapshotSink snapshot_sink;
    std::function<void()> done;
    int64_t remaining = 0;  // lanes yet to run it
    int64_t next_chunk = 0;                    // kSend: the next index to hand to the sink
    std::map<int64_t, zmq::message_t> held;   // kSend: chunks ready before their turn
  };

  void Queue(Op op);
  Op& At(int64_t at) { return ops_[static_cast<size_t>(at - first_op_)]; }
  // Runs lane `lane` as far as it can go.
  void RunLane(int64_t lane);
  // Whether lane `lane` has what `op` needs.
  bool Ready(const Op& op, int64_t lane) const;
  // Runs `op` on floats [from, to) of lane `lane`; `fill`: copy them into
  // its point.
  void RunBlock(Op& op, int64_t lane, int64_t from, int64_t to, bool fill);
  // Gives lane `lane` a buffer of its own before it changes, when a reply
  // still views the one it has.
  void Unshare(int64_t lane);
  // After `op` ran over all of lane `lane`: frees, hands over, counts down.
  void Finish(int64_t at, int64_t lane);
  std::shared_ptr<Point> CurrentPoint();
  std::shared_ptr<std::vector<float>> Buffer();

  proto::ChunkLayout layout_;
  // The model, one buffer per lane: replies send from them without copying.
  std::vector<std::shared_ptr<std::vector<float>>> lanes_;
  // Per lane: the buffer it had before its last copy on write, for reuse.
  std::vector<std::shared_ptr<std::vector<float>>> spares_;
  std::vector<float> accumulator_;
  std::deque<Op> ops_;          // references to elements survive push_back
  int64_t first_op_ = 0;        // the queue position of ops_.front()
  std::vector<int64_t> cursor_;  // per lane: the queue position of its next operation
  std::shared_ptr<Point> point_;  // the state after the last queued operation, once asked for
  std::vector<std::shared_ptr<std::vector<float>>> buffers_;  // snapshot copies to reuse
};

// Takes a Chunk message's payload into a streamed push (IncomingTensor::Add)
// and leaves that chunk out of the sums when it holds NaN or infinity.
// Returns whether it was finite; Protocol error, nothing taken, when Add
// refuses it.
Result<bool> TakeChunk(proto::IncomingTensor& push, int64_t index, net::Frames& payload);

// Queues a Model reply carrying the model as it stands after the operations
// queued so far. A model of one chunk goes whole, header and payload in one
// message, once its lane is there; a larger one is announced now (the header
// with chunks and chunk_floats set) and follows chunk by chunk in Chunk
// messages. A failed send is logged as a warning naming `who`.
void QueueModelReply(ModelStore& store, net::Endpoint& endpoint, const zmq::message_t* identity,
                     proto::Model header, const std::string& who);

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_MODEL_STORE_H_
