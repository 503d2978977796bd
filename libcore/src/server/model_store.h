// The server's model and gradient accumulator, worked on lane by lane so that
// streamed payloads pipeline: a push is summed chunk by chunk while its later
// chunks are still on the wire, and a reply sends each chunk of the model as
// soon as that chunk's update is applied.
#ifndef DMLPS_SERVER_MODEL_STORE_H_
#define DMLPS_SERVER_MODEL_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "dmlps/net/endpoint.h"
#include "dmlps/optim/optimizer.h"
#include "dmlps/proto/codec.h"
#include "server/aggregate.h"
#include "server/block_work.h"
#include "server/centered_clip.h"
#include "server/lane_buffers.h"
#include "server/lane_queue.h"
#include "server/push_bound.h"
#include "server/step_clip.h"
#include "server/store_ops.h"

namespace dmlps::server {

// The model cut into lanes of a fixed number of floats (the chunks of its
// replies). What the server does to the model is queued as operations; every
// lane runs every operation in the order queued, each as soon as the data it
// needs is there, so the end result is that of running them one after the
// other over the whole model. All calls, and the callbacks they make, happen
// on the caller's thread, in the same order whatever the threads; callbacks
// must not call the store. Only the float work of the lanes (sums, optimizer
// steps, copies) may run on the store's own threads, over disjoint ranges
// and with each float's operations in the same order, so that the model
// ends bit for bit where one thread would have taken it.
//
// The store turns each call into operations (store_ops.h) and holds the
// parts that run them: the lanes' memory (lane_buffers.h), the queue that
// runs them lane by lane (lane_queue.h), their float work (block_work.h),
// the norm bound and centred clipping of pushes (push_bound.h) and the
// clipping of steps (step_clip.h).
class ModelStore {
 public:
  // Takes one chunk of a reply: its index in layout() and a frame viewing a
  // snapshot of the model without copying. Called in index order.
  using ChunkSink = StoreOp::ChunkSink;
  // Takes a whole snapshot of the model.
  using SnapshotSink = StoreOp::SnapshotSink;

  // A model holding `params`, in lanes of `lane_floats` floats (at least 1),
  // worked on by `threads` threads, the caller's included (1: the caller's
  // alone; a model of one lane always runs on the caller's thread).
  ModelStore(std::vector<float> params, int64_t lane_floats, int64_t threads = 1);
  ~ModelStore();
  ModelStore(const ModelStore&) = delete;
  ModelStore& operator=(const ModelStore&) = delete;

  const proto::ChunkLayout& layout() const { return layout_; }
  int64_t size() const { return layout_.size; }
  // The threads that run the lanes' float work, the caller's included.
  int64_t threads() const { return queue_.threads(); }

  // Queues acc += weight * push, over the values of `push` that are not left
  // out; a lane runs it once push holds that lane's floats or is closed. A
  // streamed push's frames are freed as soon as the last Stage queued for it
  // has summed them, so a large push never holds all its memory at once.
  void Stage(std::shared_ptr<proto::IncomingTensor> push, float weight);
  // Queues acc[i] += W * rule(the pushes' values at i), W the sum of
  // `weights` (one per push), over the values that are not left out (a
  // coordinate none has adds nothing): with the Apply scale 1 / W the
  // update is the rule's value, as it is the weighted mean for Stage. A
  // lane runs it once every push holds that lane's floats or is closed.
  void Combine(std::vector<std::shared_ptr<proto::IncomingTensor>> pushes,
               std::vector<float> weights, const Aggregation& rule);
  // The same under centred clipping: acc += W * clipper's Round of the
  // pushes (those of `workers`, one each; a worker's several pushes count
  // as one, their mean weighted by `weights`) over the parameters, and W
  // times their median over the module state. Centred clipping needs every push
  // whole: a lane runs it only once all of them are complete or closed,
  // and the first lane to do so runs the round for all. `clipper` outlives
  // the store's operations.
  void Combine(std::vector<std::shared_ptr<proto::IncomingTensor>> pushes,
               std::vector<float> weights, CenteredClip& clipper, std::vector<int64_t> workers);
  // Every push Staged or Combined from now on is first scaled down to L2
  // norm `max_norm` when longer (0: no bound), so that one push moves the
  // model a bounded distance. Its norm needs all of it: a lane then runs
  // the push only once it is complete or closed.
  void set_max_norm(double max_norm) { bound_.set_max_norm(max_norm); }
  // Every optimizer step queued from now on first scales its gradient
  // (scale * acc) down to L2 norm `clip_norm` over the whole model when
  // longer, as torch.nn.utils.clip_grad_norm_ does (factor clip_norm /
  // (norm + 1e-6)); 0: not clipped. The norm needs every lane's sum: a
  // lane then checks and takes the step only once every lane has summed.
  void set_clip_norm(double clip_norm) { clip_.set_clip_norm(clip_norm); }
  // Clipping when this store holds a server shard's slice: the norm is the
  // whole model's. Once every lane has summed the squares of a step's
  // gradient, `report(step, squares)` gets this slice's sum (step: the
  // optimizer's StepInfo::number), and the step waits for
  // TakeGlobalSquares of the same step: the sum over every slice.
  using NormReport = StepClip::NormReport;
  void set_shared_norm(NormReport report) { clip_.set_shared_norm(std::move(report)); }
  // The sum of squares of step `step`'s gradient over the whole model
  // (before the step's scale), for a clipped step waiting for it; ignored
  // when no step queued is waiting for it.
  void TakeGlobalSquares(int64_t step, double squares) { queue_.TakeGlobalSquares(step, squares); }
  // The floats from `begin` on are module state (model::TensorSpec::state):
  // an Apply sets them to the weighted mean of the values Staged (or the
  // rule's value of those Combined) since the Apply before, W the weights'
  // sum, instead of stepping them, and leaves them as they are when nothing
  // was staged. The norm bound and clipping read the parameters only.
  // Default: no state.
  void set_state_begin(int64_t begin) {
    work_.set_state_begin(begin);
    bound_.set_state_begin(begin);
  }
  // Runs once an Apply is over: `applied` false when it was refused.
  using AppliedFn = StoreOp::AppliedFn;
  // Queues optim::ApplyAccumulated(optimizer, scale, params, acc): one
  // optimizer step along scale * acc, or params += scale * acc without one;
  // then acc = 0. The step is checked first over every lane
  // (optim::AccumulatedStaysFinite) and taken only if it leaves the whole
  // model finite; otherwise it is refused whole: the model and the
  // optimizer's state stay as they were, acc is dropped, and refused()
  // counts it. So a lane applies only once every lane has its data, while
  // the sums and the checks still run as the data streams in. With an
  // optimizer that can (optim::StepsOutOfPlace), the check computes the
  // step itself, out of place into a second buffer of the lane, as the
  // lane's data comes in, and the apply then only swaps that buffer in: the
  // step costs no pass over the model after the last chunk. `done`, when
  // given, runs once every lane is through.
  void Apply(optim::Optimizer* optimizer, float scale, AppliedFn done = {});
  // Queues sending the model as it stands after the operations queued
  // before: sink gets each chunk once its lane is there. The chunks view the
  // lanes without copying; a lane still being sent from never changes under
  // them: it is copied before it would (copy on write), or the step goes to
  // the lane's other buffer (see Apply).
  void Send(ChunkSink sink);
  // Queues a snapshot of the model as it stands after the operations queued
  // before: sink gets it once every lane is there. Snapshots of the same
  // state share one copy.
  void Snapshot(SnapshotSink sink);

  // Runs whatever the data that arrived allows. Queuing runs at once what it
  // can; call this after adding chunks to a push that Stage took, or after
  // closing it.
  void Advance() { queue_.Advance(); }

  // Operations not yet run by every lane.
  int64_t pending() const { return queue_.pending(); }
  // Whether an Apply queued has yet to run on some lane: until it has, the
  // model and the optimizer's state may stand at different updates lane by
  // lane.
  bool ApplyPending() const { return queue_.ApplyPending(); }
  // Applies refused because they would have made the model non-finite.
  int64_t refused() const { return refused_; }
  // A copy of the model where every lane stands now (for tests).
  std::vector<float> Params() const { return buffers_.Params(); }

 private:
  proto::ChunkLayout layout_;
  LaneBuffers buffers_;
  SnapshotCopies snapshots_;
  BlockWork work_;
  PushBound bound_;
  StepClip clip_;
  LaneQueue queue_;  // runs on the parts above
  int64_t refused_ = 0;
  double staged_weight_ = 0;  // since the last Apply, for the module state's mean
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
// messages. A failed send is logged as a warning naming `who`, once per
// reply, and the rest of that reply is not sent; `failed` (if set) then
// hears why, so that the caller can drop a peer that does not read. With
// `digest` the reply carries the payload's proto::ModelDigest (in the
// header when whole, else on the last Chunk), logged naming `who`.
void QueueModelReply(ModelStore& store, net::Endpoint& endpoint, const zmq::message_t* identity,
                     proto::Model header, const std::string& who,
                     std::function<void(const Status&)> failed = {}, bool digest = false);

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_MODEL_STORE_H_
