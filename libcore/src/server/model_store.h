// The server's model and gradient accumulator, worked on lane by lane so that
// streamed payloads pipeline: a push is summed chunk by chunk while its later
// chunks are still on the wire, and a reply sends each chunk of the model as
// soon as that chunk's update is applied.
#ifndef DMLPS_SERVER_MODEL_STORE_H_
#define DMLPS_SERVER_MODEL_STORE_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "dmlps/base/thread_pool.h"
#include "dmlps/net/endpoint.h"
#include "dmlps/optim/optimizer.h"
#include "dmlps/proto/codec.h"
#include "server/aggregate.h"
#include "server/centered_clip.h"

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
class ModelStore {
 public:
  // Takes one chunk of a reply: its index in layout() and a frame viewing a
  // snapshot of the model without copying. Called in index order.
  using ChunkSink = std::function<void(int64_t index, zmq::message_t frame)>;
  // Takes a whole snapshot of the model.
  using SnapshotSink = std::function<void(std::shared_ptr<const std::vector<float>> values)>;

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
  int64_t threads() const { return pool_ != nullptr ? pool_->threads() : 1; }

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
  void set_max_norm(double max_norm) { max_norm_ = max_norm; }
  // Every optimizer step queued from now on first scales its gradient
  // (scale * acc) down to L2 norm `clip_norm` over the whole model when
  // longer, as torch.nn.utils.clip_grad_norm_ does (factor clip_norm /
  // (norm + 1e-6)); 0: not clipped. The norm needs every lane's sum: a
  // lane then checks and takes the step only once every lane has summed.
  void set_clip_norm(double clip_norm) { clip_norm_ = clip_norm; }
  // Clipping when this store holds a server shard's slice: the norm is the
  // whole model's. Once every lane has summed the squares of a step's
  // gradient, `report(step, squares)` gets this slice's sum (step: the
  // optimizer's StepInfo::number), and the step waits for
  // TakeGlobalSquares of the same step: the sum over every slice.
  using NormReport = std::function<void(int64_t step, double squares)>;
  void set_shared_norm(NormReport report) { norm_report_ = std::move(report); }
  // The sum of squares of step `step`'s gradient over the whole model
  // (before the step's scale), for a clipped step waiting for it; ignored
  // when no step queued is waiting for it.
  void TakeGlobalSquares(int64_t step, double squares);
  // The floats from `begin` on are module state (model::TensorSpec::state):
  // an Apply sets them to the weighted mean of the values Staged (or the
  // rule's value of those Combined) since the Apply before, W the weights'
  // sum, instead of stepping them, and leaves them as they are when nothing
  // was staged. The norm bound and clipping read the parameters only.
  // Default: no state.
  void set_state_begin(int64_t begin) { state_begin_ = begin; }
  // Runs once an Apply is over: `applied` false when it was refused.
  using AppliedFn = std::function<void(bool applied)>;
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
  // Applies refused because they would have made the model non-finite.
  int64_t refused() const { return refused_; }
  // A copy of the model where every lane stands now (for tests).
  std::vector<float> Params() const;

 private:
  // The model's state at one point of the queue, copied lane by lane.
  struct Point {
    std::shared_ptr<std::vector<float>> values;
    std::vector<char> filled;  // per lane
  };
  // An apply's check over every lane, which the apply waits for.
  struct Verdict {
    std::atomic<bool> finite{true};  // written by the lanes' threads
    int64_t lanes_left = 0;          // lanes yet to check; on the caller's thread
    optim::StepInfo step;            // the step checked and taken
    float state_scale = 0;           // 1 / the weights staged for it; 0: the state stays
    // Clipped steps: each block's sum of squares of acc (kNorm, one slot a
    // block, see NormSlot), the lanes yet to sum, and whether the
    // gradient's scale was clipped yet.
    bool clip = false;
    std::vector<double> squares;
    int64_t norm_lanes_left = 0;
    bool clipped = false;
    // Clipped across shards (set_shared_norm): the whole model's sum of
    // squares, once TakeGlobalSquares gave it.
    bool shared = false;
    std::optional<double> global_squares;
  };
  struct Op {
    // kVerify checks the step of the kApply queued right after it.
    // kNorm sums the squares of acc for the clipped step of the kVerify after it.
    enum class Kind { kStage, kCombine, kNorm, kVerify, kApply, kSend, kSnapshot };
    Kind kind = Kind::kStage;
    std::shared_ptr<proto::IncomingTensor> push;
    // kCombine: the pushes, each one's factor (its norm bound), the rule.
    std::vector<std::shared_ptr<proto::IncomingTensor>> pushes;
    std::vector<float> factors;
    Aggregation rule;
    // kCombine under centred clipping: the clipper, the pushes' workers,
    // and the round's centre over the parameters once Bound ran it (a copy:
    // a lane ahead may run the next round before the others summed this).
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
    std::shared_ptr<Point> point;
    std::shared_ptr<Verdict> verdict;  // kVerify, kApply
    ChunkSink chunk_sink;
    SnapshotSink snapshot_sink;
    AppliedFn done;
    int64_t remaining = 0;                   // lanes yet to run it
    int64_t next_chunk = 0;                  // kSend: the next index to hand to the sink
    std::map<int64_t, zmq::message_t> held;  // kSend: chunks ready before their turn
  };

  void Queue(Op op);
  Op& At(int64_t at) { return ops_[static_cast<size_t>(at - first_op_)]; }
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

  // Plans lane `lane`'s run of whatever its data allows into `run`, and
  // moves its cursor past it; false when nothing can run.
  bool PlanLane(int64_t lane, LaneRun* run);
  // Where the block of floats at `from` in lane `lane` keeps its sum of
  // squares in Verdict::squares: distinct for every block of every lane.
  static size_t NormSlot(int64_t lane, int64_t from);
  // Scales a clipped step's gradient by clip_norm_ / norm once every lane has summed.
  void Clip(Verdict& verdict) const;
  // Takes the norm bound into op (kStage: its weight; kCombine: its
  // factors) once its pushes are complete, and runs its round of centred
  // clipping.
  void Bound(Op& op) const;
  // The centred clipping round of `op`, its pushes bounded.
  void ClipRound(Op& op) const;
  // kCombine over floats [from, to).
  // `state`: over module state, whose values are never bounded.
  void RunCombine(const Op& op, int64_t from, int64_t to, bool state = false);
  // RunBlock's work on parameters [from, to), and on module state [from, to).
  void RunParamBlock(const Op& op, float* lane_params, float* lane_out, int64_t lane, int64_t from,
                     int64_t to, bool fill);
  void RunStateBlock(const Op& op, float* lane_params, float* lane_out, int64_t lane, int64_t from,
                     int64_t to);
  // Plans and runs every lane once; whether any lane ran anything.
  bool AdvancePass();
  // Runs the float work of `run` on floats [from, to) of its lane.
  void RunFloats(const LaneRun& run, int64_t from, int64_t to);
  // After the float work of `run`: frees, hands over, counts down, and lets
  // go of the buffers it held.
  void FinishLane(LaneRun& run);
  // Whether lane `lane` has what `op` needs.
  bool Ready(const Op& op, int64_t lane) const;
  // Runs `op` on floats [from, to) of lane `lane`, whose values are at
  // `params` (and its candidate buffer at `out`, or null); `fill`: copy
  // them into its point.
  void RunBlock(const Op& op, float* params, float* out, int64_t lane, int64_t from, int64_t to,
                bool fill);
  // Lane `lane`'s candidate buffer, for a check to compute its step in: the
  // one it has when nothing views it any more, else a fresh one.
  std::shared_ptr<std::vector<float>> Candidate(int64_t lane);
  // Gives lane `lane` a buffer of its own before it changes, when a reply
  // still views the one it has; returns the buffer to copy from into the
  // new one (null: none is needed), which the caller copies.
  std::shared_ptr<std::vector<float>> Unshare(int64_t lane);
  // After `op` ran over all of lane `lane`, whose values were at `params`:
  // frees, hands over, counts down.
  void Finish(int64_t at, int64_t lane, const std::shared_ptr<std::vector<float>>& params);
  std::shared_ptr<Point> CurrentPoint();
  std::shared_ptr<std::vector<float>> Buffer();

  proto::ChunkLayout layout_;
  // The model, one buffer per lane: replies send from them without copying.
  std::vector<std::shared_ptr<std::vector<float>>> lanes_;
  // Per lane: the buffer it had before its last copy on write, for reuse.
  std::vector<std::shared_ptr<std::vector<float>>> spares_;
  // Per lane: the buffer a step computed out of place goes to; an apply
  // swaps it with the lane's, so that a lane alternates between two.
  std::vector<std::shared_ptr<std::vector<float>>> candidates_;
  std::vector<float> accumulator_;
  std::deque<Op> ops_;            // references to elements survive push_back
  int64_t first_op_ = 0;          // the queue position of ops_.front()
  std::vector<int64_t> cursor_;   // per lane: the queue position of its next operation
  std::shared_ptr<Point> point_;  // the state after the last queued operation, once asked for
  std::vector<std::shared_ptr<std::vector<float>>> buffers_;  // snapshot copies to reuse
  std::unique_ptr<ThreadPool> pool_;  // null: everything on the caller's thread
  std::vector<LaneRun> runs_;         // Advance's plans, kept for their memory
  int64_t refused_ = 0;
  double max_norm_ = 0;
  double clip_norm_ = 0;
  NormReport norm_report_;
  bool advancing_ = false;  // inside Advance: a callback's TakeGlobalSquares waits for it
  int64_t state_begin_ = std::numeric_limits<int64_t>::max();
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
