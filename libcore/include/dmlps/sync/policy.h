// Synchronization policies as pure state machines: fed events (a worker
// joined, a push arrived, a pull was requested), they answer with actions for
// the server to carry out. A policy never touches a socket, a clock or a
// thread, so the server, the simulator and the unit tests drive the same code.
#ifndef DMLPS_SYNC_POLICY_H_
#define DMLPS_SYNC_POLICY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "dmlps/base/job.h"
#include "dmlps/base/status.h"

namespace dmlps::sync {

using WorkerId = int64_t;

// What a policy learns about a worker when it joins.
struct WorkerInfo {
  int64_t max_batch = 0;  // the most samples it can take in one step; 0: no cap
  // The cores of the server's host where the worker runs there too (its
  // Hello names the server's host); 0: another host, or unknown.
  int64_t host_cores = 0;
};

// What a policy needs to know about one push.
struct PushInfo {
  int64_t clock = 0;         // the worker's push this is (0-based count of its pushes)
  int64_t base_version = 0;  // model version the gradient or delta was computed on
  int64_t samples = 0;       // samples behind the (mean) gradient
  // False when the server refused the payload (non-finite values): the step
  // counts as done but contributes nothing to the model.
  bool usable = true;
  int64_t batch = 0;      // samples the worker was asked for in this step
  double busy_s = 0;      // seconds the step took the worker: computing plus emulated slowness
  double compute_s = 0;   // of busy_s, computing
  double run_wait_s = 0;  // of compute_s, waiting for a core (0: none, or unknown)
  double comm_s = 0;      // seconds the worker's previous push took to send (0: unknown)
  double cpu = 0;         // the worker's CPU use over the step, in cores
  double memory = 0;      // the worker's resident memory, bytes
  // Seconds from the server's reply to this push's arrival, as the server saw
  // them: the step plus both transfers on a real link, which the worker
  // cannot time (a send returns once queued). 0: unknown.
  double cycle_s = 0;
};

// How a worker runs its steps under a policy; sent to it when it joins.
enum class WorkerMode {
  kSync,          // pull, compute one batch, push (bsp, asp, ssp, backup, lbbsp)
  kChunked,       // as kSync, in chunks, stopping early on SyncNow (abps)
  kLocal,         // train a local copy, push deltas, download when told (wbsp)
  kLocalOverlap,  // kLocal with compute and communication on two threads (wbsp-overlap)
  kToken,         // train the tokens the server grants, one push each (token)
  // Take H local steps on a copy, push its pseudo-gradient (model at the
  // start minus the copy), pull the model (localsgd, async-localsgd).
  kLocalSgd,
};
std::string_view WorkerModeName(WorkerMode mode);
// The mode WorkerModeName calls `name`; InvalidArgument for any other name.
Result<WorkerMode> ParseWorkerMode(std::string_view name);

// The actions a policy answers with, one struct each. "The push" is the push
// being handled when the action was emitted; rounds and clocks are the
// policy's (a worker that joined a running job counts its own from 0).

// acc += weight * (the payload of the push).
struct Stage {
  WorkerId worker = -1;
  double weight = 0;
};
// model <- optimizer(model, scale * acc); acc <- 0; version + 1.
struct Apply {
  double scale = 0;
};
// model <- model + scale * acc (no optimizer); acc <- 0; version + 1.
struct ApplyDelta {
  double scale = 0;
};
// Send the worker the current model (with its batch size and token, if set).
struct ReplyModel {
  WorkerId worker = -1;
};
// The worker's pull waits.
struct Hold {
  WorkerId worker = -1;
};
// The push is discarded; its samples are wasted work. `late`: the policy
// expected it (a late push), no one's fault; else the worker erred.
struct Drop {
  WorkerId worker = -1;
  std::string reason;
  bool late = false;
};
// Answer the worker's push: go on with your model; `download`: fetch it first.
struct Continue {
  WorkerId worker = -1;
  bool download = false;
};
// Tell the worker to stop after its current chunk and push in `round`.
struct SyncNow {
  WorkerId worker = -1;
  int64_t round = 0;
};
// The worker's batch size from its next step on.
struct SetBatch {
  WorkerId worker = -1;
  int64_t samples = 0;
};
// The worker's next token, sent with its next reply.
struct Grant {
  WorkerId worker = -1;
  int64_t token = -1;
};

// The local steps the worker takes from its next model on (async-localsgd
// with DyLU), sent with its next reply.
struct SetLocalSteps {
  WorkerId worker = -1;
  int64_t steps = 0;
};

// A composite policy (SwitchingPolicy) changes the policy it runs: decided
// (`done` false: it drains to a quiescent point from now on) or done (the
// new one runs from the next event). What the decision measured and why, for
// the log and the trace; it addresses no worker.
struct Switch {
  std::string from;
  std::string to;
  std::string why;
  double measured = 0;    // the value the decision's rule looked at
  double threshold = 0;   // the value it crossed
  int64_t iteration = 0;  // the global iteration when emitted
  bool done = false;
};

// A decision a composite policy's decider took (switch or stay), with what
// it measured and predicted, for the log and the trace; it addresses no
// worker and changes nothing by itself (a switch follows as Switch).
struct Decision {
  std::string running;   // the policy running when it decided
  std::string chosen;    // the policy it chose; running: stay
  std::string reason;    // why, in words
  std::string measured;  // what it measured, in words (per-worker steps, delays)
  // Per candidate, its predicted seconds per BSP-equivalent iteration
  // (advise::Prediction::effective_s); a candidate that failed is left out.
  std::vector<std::pair<std::string, double>> predicted;
  double remaining = 0;  // BSP-equivalent iterations predicted left in the run
  double gain_s = 0;     // predicted time saved over them by `chosen`'s best rival
  double cost_s = 0;     // predicted cost of switching (the drain)
  double decide_ms = 0;  // what taking the decision cost, wall-clock milliseconds
  int64_t iteration = 0;
};

using Action = std::variant<Stage, Apply, ApplyDelta, ReplyModel, Hold, Drop, Continue, SyncNow,
                            SetBatch, Grant, SetLocalSteps, Switch, Decision>;
using Actions = std::vector<Action>;

// What a policy keeps in a checkpoint to go on after a restart: the model's
// version, the global iteration, and what the policy itself needs (LB-BSP:
// the batch split and the state of its numerical search; the others need
// nothing more, since workers rejoin at the iteration's start). Rounds in
// progress are not kept: checkpoints are taken between iterations.
struct PolicyState {
  int64_t version = 0;
  int64_t iteration = 0;
  std::vector<int64_t> extra;
};

struct PolicyConfig {
  // A policy's row in sync/registry.h (PolicyNames()).
  std::string name = "bsp";
  // The job the policy runs: its workers, their batch (lbbsp: the mean;
  // the global batch B is batch * workers), and the target and iteration
  // limit sync-switch places its switch by; auto predicts for its model.
  JobSpec job;
  int64_t staleness = 3;          // ssp: clocks a worker may run ahead of the slowest
  int64_t backup = 1;             // backup: pushes per iteration not waited for
  int64_t chunk = 16;             // abps: samples per chunk
  int64_t rebalance_every = 5;    // lbbsp: iterations between batch-size changes
  std::string lb_mode = "cpu";    // lbbsp: cpu (analytic) | gpu (numerical)
  std::string predictor = "ema";  // lbbsp cpu: last | ema | arima | narx
  double ema_alpha = 0.5;         // lbbsp cpu with ema: weight of the newest speed
  int64_t arima_p = 2;            // lbbsp cpu with arima: the order (p, d, q)
  int64_t arima_d = 0;
  int64_t arima_q = 1;
  int64_t lb_step = 0;      // lbbsp gpu: samples moved per rebalance at first; 0: B / (4N)
  int64_t token_size = 16;  // token: samples per token
  // localsgd, async-localsgd: local steps per push (H), and the server's
  // outer optimizer, SGD on the mean pseudo-gradient with this learning
  // rate and momentum, Nesterov's unless outer_nesterov is false. The
  // defaults (1, 0: the model moves by the workers' mean move) keep the
  // step the inner SGD's; DiLoCo's 0.7 and 0.9 multiply it by 7 on top of
  // the inner momentum and diverge (docs/algorithms-local-sgd.md, "Local SGD").
  int64_t local_steps = 8;
  double outer_lr = 1;
  double outer_momentum = 0;
  bool outer_nesterov = true;
  // async-localsgd: scale each worker's local steps to its speed (DyLU), and
  // take the outer momentum once every this many pushes (delayed Nesterov;
  // 0: the number of workers). asp, ssp, dssp: take the server's momentum
  // once every this many pushes (delayed momentum; 0: at every push, as
  // without it), TakesMomentumEvery.
  bool dylu = false;
  int64_t momentum_every = 0;
  // dssp: the range each worker's staleness bound is chosen in.
  int64_t staleness_low = 1;
  int64_t staleness_high = 4;
  // sync-switch: BSP, then ASP once `switch_at` of the run is done (of the
  // target's accuracy progress when there is a target, else of
  // max_iterations); with switch_online, ASP while a transient straggler
  // is seen and BSP otherwise instead.
  double switch_at = 0.125;
  bool switch_online = false;
  // auto: the policies it may run, as dmlps-bench names them ("ssp:3";
  // empty: autopolicy::AutoCandidates), and the iterations between its decisions
  // when no lasting change of speed calls for one sooner.
  std::vector<std::string> candidates{};
  int64_t decide_every = 20;
  // auto: predict on a thread of its own, so that no round waits for a
  // decision (the server; autopolicy::AutoDecider::Options::background).
  bool decide_in_background = false;
};

// Whether the server steps the model with the outer optimizer of `config`
// (outer_lr, outer_momentum, outer_nesterov) rather than with the job's
// --lr and --momentum, which then drive the workers' local steps.
bool UsesOuterOptimizer(const PolicyConfig& config);

// `policy` running `job`: how a configuration that holds both (the
// server's, the simulator's) hands its job to the policy, whole.
inline PolicyConfig WithJob(PolicyConfig policy, const JobSpec& job) {
  policy.job = job;
  return policy;
}

// The settings of the optimizer the server steps the model with: the job's
// learning rate and momentum, or the outer optimizer's (UsesOuterOptimizer).
struct ServerOptimizer {
  double lr = 0;
  double momentum = 0;
  bool nesterov = false;
  int64_t momentum_every = 1;  // steps per momentum step (delayed momentum when above 1)
};
ServerOptimizer ServerOptimizerFor(const PolicyConfig& config, double lr, double momentum);
// Whether `config`'s policy takes PolicyConfig::momentum_every: async-localsgd
// and the policies that apply each push on arrival (asp, ssp, dssp); its
// row's PolicyTraits (sync/registry.h).
bool TakesMomentumEvery(const PolicyConfig& config);
// Whether the policy `name` ("ssp:3", or "ssp") answers each push on its
// own (asp, ssp, dssp, async-localsgd) rather than broadcasting the model
// at the end of a round: its workers compute on models that miss the
// others' latest gradients.
bool AnswersEachPush(std::string_view name);

class Policy {
 public:
  virtual ~Policy() = default;

  virtual std::string Name() const = 0;
  // How workers run their steps under this policy: its registry row's mode
  // (PolicyRow::mode, ModeOf(Name())), kSync for a name with no row. A
  // policy whose workers' mode follows another policy while it runs (a
  // SwitchingPolicy) says its own.
  virtual WorkerMode mode() const;

  // Worker `w` is part of the run from StartClock() on (clock 0 at the start
  // of a run). A worker may join a running job, under a rank that a lost
  // worker left free or one AddWorker made; it then gets the current model
  // with its first pull. REQUIRES: w in [0, num_workers()), not joined.
  void WorkerJoined(WorkerId w, const WorkerInfo& info, Actions* out);
  void WorkerJoined(WorkerId w, Actions* out) { WorkerJoined(w, WorkerInfo{}, out); }
  // Worker `w` is gone (lost or left): from now on nothing waits for it. A
  // round it held up closes if everyone else is in; work it was given (a
  // batch share, tokens) goes to the others. What it pushed stays applied or
  // staged. A no-op for a worker not joined.
  void WorkerLeft(WorkerId w, Actions* out);
  // Makes room for one more worker and returns its rank (not joined yet).
  WorkerId AddWorker();
  // Worker `w` finished a step. A push whose clock is not the worker's next one
  // is dropped; otherwise the policy stages, applies and answers.
  void PushArrived(WorkerId w, const PushInfo& push, Actions* out);
  // Worker `w` wants the model: replied to now or held.
  void PullRequested(WorkerId w, Actions* out) { OnPull(w, out); }
  // The model was evaluated at `accuracy` (evaluations in the order they
  // were taken). Policies that decide by accuracy look; the others ignore it.
  void EvaluationSeen(double accuracy, Actions* out) { OnEvaluation(accuracy, out); }

  // Applies made so far = the version of the model the server holds.
  int64_t version() const { return version_; }
  // Global iterations completed, the unit of --eval-every and --max-iterations:
  // rounds for the synchronous policies; pushes / N for the asynchronous ones.
  virtual int64_t iteration() const;
  // Pushes worker `w` has completed.
  int64_t clock(WorkerId w) const { return workers_[w].clock; }
  // The slowest joined worker's clock. O(1): kept up to date as clocks move.
  int64_t MinClock() const { return min_clock_; }
  // Ranks, joined or not.
  int64_t num_workers() const { return static_cast<int64_t>(workers_.size()); }
  // Workers joined now.
  int64_t live_workers() const { return joined_count_; }
  bool joined(WorkerId w) const { return workers_[w].joined; }

  // What a checkpoint keeps; see PolicyState.
  PolicyState Save() const;
  // Goes on from `state`, saved by a policy of the same name. Call before
  // any worker joins. An `extra` that does not fit (another number of
  // workers) is ignored: the policy starts its own state afresh.
  void Restore(const PolicyState& state);

 protected:
  explicit Policy(int64_t num_workers) : workers_(num_workers) {}

  // The clock a worker joining now starts at; the slowest live worker's by
  // default, so that it holds no one up and is held by no one.
  virtual int64_t StartClock() const;
  // Policy-specific reaction to a join, after the worker is recorded.
  virtual void OnJoin(WorkerId w, const WorkerInfo& info, Actions* out) {}
  // Policy-specific reaction to a worker gone, after it is no longer joined.
  virtual void OnLeave(WorkerId w, Actions* out) {}
  // One more rank, number num_workers() - 1: per-worker state grows.
  virtual void OnAddWorker() {}
  // Policy-specific parts of Save and Restore.
  virtual std::vector<int64_t> SaveExtra() const { return {}; }
  virtual void OnRestore(const PolicyState& state) {}
  // Policy-specific handling of a push already accepted in clock order.
  virtual void OnPush(WorkerId w, const PushInfo& push, Actions* out) = 0;
  // Whether worker `w` may be sent the model now.
  virtual bool MayStart(WorkerId w) const = 0;
  // Extra checks before a push is accepted; an empty string accepts it.
  virtual std::string Refuse(WorkerId w, const PushInfo& push) const { return {}; }
  // Called when a pull is answered at once or released from hold, just before
  // its ReplyModel is emitted (e.g. to emit SetBatch or Grant first).
  virtual void BeforeReply(WorkerId w, Actions* out) {}
  // Answers a pull: the model now (MayStart) or a hold. A composite policy
  // hands it to the policy it runs instead.
  virtual void OnPull(WorkerId w, Actions* out);
  virtual void OnEvaluation(double accuracy, Actions* out) {}
  // Whether nothing is staged for an update still to come (a round in
  // progress): the model then holds every accepted push. Policies that
  // apply each push on arrival always are.
  virtual bool AtBoundary() const { return true; }

  // Emits Apply (or ApplyDelta) and counts the new version.
  void EmitApply(double scale, Actions* out);
  void EmitApplyDelta(double scale, Actions* out);
  // Answers every held pull whose worker may now start.
  void ReleaseHeld(Actions* out);
  bool pull_held(WorkerId w) const { return workers_[w].pull_held; }
  int64_t joined_count() const { return joined_count_; }
  int64_t total_pushes() const { return total_pushes_; }

 private:
  // Runs other policies and forwards their hooks (switching.h).
  friend class SwitchingPolicy;

  struct WorkerState {
    bool joined = false;
    bool pull_held = false;
    int64_t clock = 0;
  };
  // Recounts min_clock_ and at_min_clock_ from scratch.
  void RecountMinClock();

  std::vector<WorkerState> workers_;
  int64_t version_ = 0;
  int64_t total_pushes_ = 0;
  // The asynchronous policies' iteration: it ends once as many pushes as
  // workers were live arrived in it, so it only rises as workers come and go.
  int64_t async_iteration_ = 0;
  int64_t pushes_in_iteration_ = 0;
  // The clock a worker starts at when none is live to take it from.
  int64_t floor_clock_ = 0;
  // Kept as events arrive, so that policies of thousands of workers (the
  // simulator's) pay O(1) per push for them, not O(N).
  int64_t joined_count_ = 0;
  int64_t min_clock_ = 0;     // over joined workers; 0 before any joined
  int64_t at_min_clock_ = 0;  // joined workers whose clock is min_clock_
};

// Bulk synchronous: all N pushes of an iteration, computed on the same
// version, are averaged sample-weighted and applied once. A-BSP and LB-BSP
// are BSP with more to do when a push arrives or a round closes: they
// derive from this class and use its hooks, so the round logic and its
// invariant live in one place. Synchronous local SGD and FedAvg are BSP's
// rounds and nothing more at the server (their pushes are pseudo-gradients
// of H local steps): they run as this class under their own names, their
// registry rows giving their workers' mode and the server's outer
// optimizer (sync/localsgd.h, sync/fedavg.h).
class BspPolicy : public Policy {
 public:
  // name: the policy it runs as, "bsp", "localsgd" or "fedavg".
  explicit BspPolicy(int64_t num_workers, std::string name = "bsp")
      : Policy(num_workers), name_(std::move(name)) {}
  std::string Name() const override { return name_; }
  int64_t iteration() const override { return round_; }

 protected:
  void OnPush(WorkerId w, const PushInfo& push, Actions* out) override;
  bool MayStart(WorkerId w) const override;
  std::string Refuse(WorkerId w, const PushInfo& push) const override;
  // A joining worker pushes in the current round.
  int64_t StartClock() const override { return round_; }
  // The round waits for the live workers only: a worker gone before it
  // pushed no longer counts, and one gone after its push still contributes
  // its gradient (computed on this version) without being waited for.
  void OnLeave(WorkerId w, Actions* out) override;
  void OnRestore(const PolicyState& state) override { round_ = state.iteration; }
  // Between rounds: no push of a round in progress is staged.
  bool AtBoundary() const override { return arrived_ == 0 && !pushed_by_gone_; }

  // A push was accepted into the round (and staged if usable); `first`: it
  // is the round's first.
  virtual void OnArrival(WorkerId w, const PushInfo& push, bool first, Actions* out) {}
  // The round closed and its update was emitted; held pulls are released next.
  virtual void OnRoundClosed(Actions* out) {}
  // Rounds closed so far.
  int64_t round() const { return round_; }

 private:
  // Closes the round when every live worker has pushed in it.
  void MaybeCloseRound(Actions* out);

  std::string name_;
  int64_t round_ = 0;
  int64_t arrived_ = 0;  // live workers that pushed in the round
  int64_t staged_samples_ = 0;
  bool pushed_by_gone_ = false;  // a worker that pushed in the round has gone
};

// Stale synchronous with bound s: pushes apply on arrival (scaled 1/N) and a
// worker may start clock c only while c - MinClock() <= s. Asynchronous is the
// same with no bound.
class SspPolicy : public Policy {
 public:
  // staleness < 0 means unbounded (ASP).
  SspPolicy(int64_t num_workers, int64_t staleness) : Policy(num_workers), staleness_(staleness) {}
  std::string Name() const override;

 protected:
  void OnPush(WorkerId w, const PushInfo& push, Actions* out) override;
  bool MayStart(WorkerId w) const override;
  // The slowest worker gone, the minimum clock may rise and free others.
  void OnLeave(WorkerId w, Actions* out) override;

 private:
  int64_t staleness_;
  // MinClock() when held pulls were last released: a held worker's clock
  // stands still, so only a rise of MinClock() can release it.
  int64_t released_at_min_clock_ = -1;
};

// Builds the policy `config` names (its row in sync/registry.h);
// InvalidArgument for an unknown name, settings that do not fit it (e.g.
// backup >= num_workers), or a policy made above the policies' room (auto),
// which a PolicyFactory of the program that runs it makes.
Result<std::unique_ptr<Policy>> MakePolicy(const PolicyConfig& config);

// Makes the policy a config names: MakePolicy, or a factory that also knows
// the policies made above the policies' room (autopolicy::MakePolicy). The
// server and the simulator are given one; empty: MakePolicy.
using PolicyFactory = std::function<Result<std::unique_ptr<Policy>>(const PolicyConfig&)>;

}  // namespace dmlps::sync

#endif  // DMLPS_SYNC_POLICY_H_
