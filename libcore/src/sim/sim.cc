// The discrete-event simulator. One event queue in virtual time; the server
// handles one message at a time as dmlps-server's loop does (the same
// policy driver carries out its policy's actions), and each worker is a small state
// machine stepping through what worker.cc's loop for its mode does:
//   sync     pull -> compute -> straggle -> send push -> pull ...
//   chunked  as sync, in chunks, pushing early once a SyncNow names the step
//   local    compute -> straggle -> local update -> push delta -> await
//            Continue -> (download) -> compute ...
//   local-overlap  a compute loop that never waits and a communication loop
//            that pushes what is pending and downloads when told
//   token    train the granted token -> push -> await Continue or Model ...
// Gradient math is real but done lazily where the result is the same: a
// sync, chunked or token step's gradient is computed when the server stages
// its push (on the snapshot the step ran on, over the samples the step
// took), so pushes that are dropped cost no math and a worker holds only a
// shared pointer to its model version. Local steps are computed when they
// end, since the next step needs them.
#include <spdlog/spdlog.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <memory>
#include <numbers>
#include <optional>
#include <queue>
#include <random>
#include <span>

#include "dmlps/optim/optimizer.h"
#include "dmlps/sim/sim.h"
#include "dmlps/sync/driver.h"
#include "dmlps/sync/summary.h"
#include "dmlps/worker/epoch_cursor.h"
#include "sim/cpu.h"
#include "sim/network.h"

namespace dmlps::sim {
namespace {

using sync::WorkerMode;
using Vec = Eigen::Map<Eigen::VectorXf>;
using ConstVec = Eigen::Map<const Eigen::VectorXf>;
using std::chrono::microseconds;

// A message's msgpack header, about; payloads add 4 bytes a parameter.
constexpr int64_t kHeaderBytes = 96;

// splitmix64's finalizer: spreads a seed over all 64 bits.
uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A uniform double in [0, 1) from the top 53 bits of one draw, the same with
// any standard library (as StragglerProfile draws).
double Uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

enum class MessageKind { kPull, kPush, kModel, kContinue, kSyncNow };

struct Message {
  MessageKind kind = MessageKind::kPull;
  int64_t worker = 0;
  int64_t clock = 0;     // pull
  sync::PushInfo push;   // push
  std::shared_ptr<const std::vector<float>> model;  // model
  int64_t version = 0;   // model
  int64_t batch = 0;     // model: the batch from now on; 0: unchanged
  int64_t token = -1;    // model, continue
  bool download = false;  // continue
  int64_t round = 0;     // sync now
};

enum class EventKind {
  kAtServer,   // a: message slot
  kAtWorker,   // a: message slot
  kJobDone,    // a: job target (dedicated machines)
  kCpuTick,    // b: generation (shared cores)
  kWake,       // a: worker, b: which of its threads (kComputeThread or kCommThread)
  kTimeLimit,
};
constexpr int64_t kComputeThread = 0;
constexpr int64_t kCommThread = 1;
// Job targets beside workers (>= 0).
constexpr int64_t kServerJob = -1;
constexpr int64_t kEvalJob = -2;
// Copying message slot s (NetworkModel::cores_copy) is job kMessageJob - s.
constexpr int64_t kMessageJob = -3;

struct Event {
  double time = 0;
  uint64_t seq = 0;  // ties go first come, first served
  EventKind kind = EventKind::kTimeLimit;
  int64_t a = 0;
  uint64_t b = 0;
  bool operator>(const Event& other) const {
    return time != other.time ? time > other.time : seq > other.seq;
  }
};

// Where a worker's main thread is.
enum class Phase {
  kAwaitModel,  // pulled; waits for the model
  kCompute,     // a compute job runs
  kStraggle,    // sleeps its emulated slowness
  kUpdate,      // local modes: the local optimizer step runs
  kTransfer,    // sleeps the bandwidth cap's transfer time, then sends the push
  kAwaitReply,  // local and token: pushed; waits for Continue (or Model)
};
// Where wbsp-overlap's communication thread is.
enum class CommPhase { kIdle, kTransfer, kAwaitContinue, kAwaitModel };

struct SimWorker {
  int64_t shard_first = 0;
  std::optional<worker::StragglerProfile> straggler;
  std::optional<worker::EpochCursor> cursor;
  std::mt19937_64 rng;
  Noise noise;

  Phase phase = Phase::kAwaitModel;
  int64_t clock = 0;  // pushes sent
  int64_t version = 0;
  int64_t batch = 0;
  int64_t token = -1;
  int64_t sync_round = -1;
  std::shared_ptr<const std::vector<float>> model;  // sync, chunked, token: the model steps run on

  // The step under way.
  int64_t step = 0;          // its number, as StragglerProfile counts steps
  int64_t step_samples = 0;  // computed so far
  int64_t job_samples = 0;   // of the compute job running
  double step_noise = 1;
  double job_start = 0;
  double step_compute = 0;
  double step_straggle = 0;
  double wait_start = 0;
  sync::PushInfo outgoing;  // the push being sent

  // Local modes: the local copy and its momentum.
  std::vector<float> params;
  std::vector<float> velocity;
  // wbsp-overlap: steps not yet handed over, the delta being pushed, a
  // downloaded model waiting to be adopted, and the communication thread.
  int64_t compute_steps = 0;
  std::vector<float> pending;
  std::vector<float> in_flight;
  int64_t pending_steps = 0;
  int64_t pending_samples = 0;
  double pending_busy = 0;
  std::shared_ptr<const std::vector<float>> downloaded;
  bool has_download = false;
  CommPhase comm = CommPhase::kIdle;

  WorkerStats stats;
};

// A push's payload as the simulated server stages it: the samples of a
// lazily computed step (empty for a local step's delta, which its worker holds).
using Samples = std::span<const int64_t>;

class Simulator : private sync::DriverSink<Samples> {
 public:
  Simulator(const SimConfig& config, const data::Dataset& train, const data::Dataset& test)
      : config_(config),
        train_(train),
        test_(test),
        n_(config.policy.num_workers),
        mode_(WorkerMode::kSync),
        network_(config.network, n_, config.network.cores_copy && config.shared_cores > 0,
                 {[this](double time, int64_t slot, bool to_server) {
                    Schedule(time, to_server ? EventKind::kAtServer : EventKind::kAtWorker, slot);
                  },
                  [this](int64_t slot, double work) { StartJob(kMessageJob - slot, work, 1); }}),
        cpu_(std::max<int64_t>(config.shared_cores, 1),
             [this](double time, uint64_t generation) {
               Schedule(time, EventKind::kCpuTick, 0, generation);
             }),
        model_(config.model),
        eval_model_(config.model) {}

  Result<SimReport> Run();

 private:
  Status Setup();
  void Schedule(double time, EventKind kind, int64_t a, uint64_t b = 0);
  void Dispatch(const Event& event);

  // The network: messages wait in slots of messages_ while network_ carries them.
  void Send(int64_t from, int64_t to, int64_t bytes, Message message);
  int64_t ServerNode() const { return n_; }
  int64_t PayloadBytes() const { return kHeaderBytes + 4 * num_params_; }

  // The processor(s): a machine each, or cores shared (cpu_).
  void StartJob(int64_t target, double work, double shared_speed);
  void OnCpuTick(uint64_t generation);
  void OnJobDone(int64_t target);

  // The server.
  void StartTraining();
  void ServerReceive(int64_t slot);
  void ServerNext();
  std::shared_ptr<const std::vector<float>> CurrentSnapshot(double* cost);
  void ServerDone();
  // The driver's sink: what the policy's actions do to the simulated server.
  // Each adds the server time it takes to job_cost_.
  void Stage(const sync::HandledPush<Samples>& push, double weight) override;
  void Apply(double scale, bool with_optimizer) override;
  void SendModel(int64_t w, const sync::Reply& reply) override;
  void SendContinue(int64_t w, bool download, const sync::Reply& reply) override;
  void SendSyncNow(int64_t w, int64_t round) override;
  void Dropped(int64_t w, const sync::Drop& drop) override;
  void Evaluate(bool must) override;
  void LimitReached() override { finished_ = true; }
  void Fail(std::string why);

  // The workers.
  void WorkerReceive(int64_t slot);
  void Pull(int64_t w);
  void StartStep(int64_t w);
  void StartChunk(int64_t w);
  void OnComputeDone(int64_t w);
  void OnStraggleDone(int64_t w);
  void OnUpdateDone(int64_t w);
  void StartPush(int64_t w);
  void OnTransferDone(int64_t w);
  void MaybeCommPush(int64_t w);
  void OnCommTransferDone(int64_t w);
  void TakeSamples(SimWorker& worker, int64_t samples);
  double DrawNoise(SimWorker& worker);

  const SimConfig& config_;
  const data::Dataset& train_;
  const data::Dataset& test_;
  const int64_t n_;
  WorkerMode mode_;

  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  uint64_t next_seq_ = 0;
  double now_ = 0;
  int64_t events_ = 0;
  bool finished_ = false;

  std::vector<Message> messages_;
  std::vector<int64_t> free_slots_;
  SimNetwork network_;
  SimCpu cpu_;  // shared cores only

  // The server.
  std::optional<sync::PolicyDriver<Samples>> driver_;
  const sync::Policy* policy_ = nullptr;  // the driver's
  std::unique_ptr<optim::Optimizer> optimizer_;
  int64_t num_params_ = 0;
  std::vector<float> params_;
  std::vector<float> accumulator_;
  std::shared_ptr<const std::vector<float>> snapshot_;
  int64_t snapshot_version_ = -1;
  std::deque<int64_t> inbox_;
  bool server_busy_ = false;
  double job_cost_ = 0;  // the server time the sink's effects took in the job under way
  std::vector<std::pair<int64_t, Message>> outbox_;

  // Math scratch.
  model::Model model_;
  model::Model eval_model_;
  std::vector<float> grad_;
  std::vector<int64_t> indices_;
  Eigen::MatrixXf x_;
  std::vector<int32_t> y_;

  std::vector<SimWorker> workers_;
  SimReport report_;
};

// ---------------------------------------------------------------- setup

Status Simulator::Setup() {
  DMLPS_ASSIGN_OR_RETURN(std::unique_ptr<sync::Policy> policy, sync::MakePolicy(config_.policy));
  driver_.emplace(std::move(policy),
                  sync::DriverOptions{.eval_every = config_.eval_every,
                                      .max_iterations = config_.max_iterations},
                  static_cast<sync::DriverSink<Samples>&>(*this));
  policy_ = &driver_->policy();
  mode_ = policy_->mode();
  num_params_ = model_.num_params();
  params_.assign(static_cast<size_t>(num_params_), 0.f);
  model_.Initialize(config_.seed, params_);
  accumulator_.assign(params_.size(), 0.f);
  grad_.assign(params_.size(), 0.f);
  DMLPS_ASSIGN_OR_RETURN(optimizer_,
                         optim::MakeOptimizer(config_.lr, config_.momentum, num_params_));

  const uint64_t noise_mix = config_.noise_seed == 0 ? 0 : Mix64(config_.noise_seed);
  workers_.resize(static_cast<size_t>(n_));
  for (int64_t r = 0; r < n_; ++r) {
    SimWorker& w = workers_[static_cast<size_t>(r)];
    const auto [first, last] = data::ShardRange(train_.rows(), {r, n_});
    if (last <= first) {
      return Status::InvalidArgument(std::to_string(n_) + " workers but only " +
                                     std::to_string(train_.rows()) +
                                     " training samples: worker " + std::to_string(r) +
                                     "'s shard is empty");
    }
    w.shard_first = first;
    // As dmlps-worker seeds its sampling and its delays (whose own seed is 0).
    const uint64_t seed = config_.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(r);
    w.cursor.emplace(last - first, seed);
    worker::StragglerSpec spec = config_.stragglers[static_cast<size_t>(r)];
    spec.seed = seed ^ noise_mix;
    w.straggler.emplace(spec, r, n_);
    w.rng.seed(Mix64(seed ^ Mix64(noise_mix ^ 0x6e6f697365ULL)));
    if (!config_.noise.empty()) w.noise = config_.noise[static_cast<size_t>(r)];
    w.batch = config_.policy.batch;
  }
  return Status::Ok();
}

Result<SimReport> Simulator::Run() {
  const auto wall_start = std::chrono::steady_clock::now();
  DMLPS_RETURN_IF_ERROR(Setup());
  if (config_.max_seconds > 0) Schedule(config_.max_seconds, EventKind::kTimeLimit, 0);
  StartTraining();
  while (!finished_ && !queue_.empty()) {
    const Event event = queue_.top();
    queue_.pop();
    now_ = event.time;
    ++events_;
    Dispatch(event);
  }
  if (!finished_) Fail("the simulation stalled: nothing left to happen");

  report_.seconds = now_;
  report_.iterations = driver_->iteration();
  report_.samples = driver_->samples_applied();
  report_.dropped_pushes = driver_->dropped_pushes();
  report_.wasted_samples = driver_->wasted_samples();
  report_.events = events_;
  std::vector<sync::WorkerTotals> totals;
  for (const SimWorker& w : workers_) {
    report_.workers.push_back(w.stats);
    totals.push_back({.steps = w.stats.steps,
                      .samples = w.stats.samples,
                      .compute_s = w.stats.compute_s,
                      .straggle_s = w.stats.straggle_s,
                      .wait_s = w.stats.wait_s});
  }
  const sync::RunSummary summary = sync::Summarize(totals, now_);
  report_.compute_ratio_mean = summary.compute_ratio_mean;
  report_.compute_ratio_min = summary.compute_ratio_min;
  report_.wait_share = summary.wait_share;
  report_.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return std::move(report_);
}

void Simulator::Schedule(double time, EventKind kind, int64_t a, uint64_t b) {
  queue_.push(Event{time, next_seq_++, kind, a, b});
}

void Simulator::Dispatch(const Event& event) {
  switch (event.kind) {
    case EventKind::kAtServer: ServerReceive(event.a); break;
    case EventKind::kAtWorker: WorkerReceive(event.a); break;
    case EventKind::kJobDone: OnJobDone(event.a); break;
    case EventKind::kCpuTick: OnCpuTick(event.b); break;
    case EventKind::kWake: {
      SimWorker& w = workers_[static_cast<size_t>(event.a)];
      if (event.b == kCommThread) {
        OnCommTransferDone(event.a);
      } else if (w.phase == Phase::kStraggle) {
        OnStraggleDone(event.a);
      } else {
        OnTransferDone(event.a);
      }
      break;
    }
    case EventKind::kTimeLimit:
      if (driver_->EndRun()) finished_ = true;
      break;
  }
}

void Simulator::Fail(std::string why) {
  if (report_.failure.empty()) report_.failure = std::move(why);
  finished_ = true;
}

// ---------------------------------------------------------------- network

void Simulator::Send(int64_t from, int64_t to, int64_t bytes, Message message) {
  int64_t slot;
  if (free_slots_.empty()) {
    slot = static_cast<int64_t>(messages_.size());
    messages_.push_back(std::move(message));
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
    messages_[static_cast<size_t>(slot)] = std::move(message);
  }
  network_.Send(now_, from, to, bytes, slot);
}

// ---------------------------------------------------------------- processors

void Simulator::StartJob(int64_t target, double work, double shared_speed) {
  work = std::max(0.0, work);
  if (config_.shared_cores == 0) {
    // A machine each: the job runs at full speed; evaluation has a core of
    // its own on the server's machine and delays nothing.
    if (target != kEvalJob) Schedule(now_ + work, EventKind::kJobDone, target);
    return;
  }
  cpu_.Start(now_, target, work, shared_speed);
}

void Simulator::OnCpuTick(uint64_t generation) {
  for (int64_t target : cpu_.OnTick(now_, generation)) OnJobDone(target);
}

void Simulator::OnJobDone(int64_t target) {
  if (target == kServerJob) {
    ServerDone();
    return;
  }
  if (target == kEvalJob) return;
  if (target <= kMessageJob) {
    network_.CopyDone(now_, kMessageJob - target);
    return;
  }
  SimWorker& w = workers_[static_cast<size_t>(target)];
  if (w.phase == Phase::kCompute) {
    OnComputeDone(target);
  } else {
    OnUpdateDone(target);
  }
}

// ---------------------------------------------------------------- server

void Simulator::StartTraining() {
  // Every worker has loaded its data and pulled clock 0: server.cc's Start(),
  // which evaluates the untrained model, accuracy at time zero.
  for (int64_t r = 0; r < n_; ++r) driver_->Attach(r, sync::WorkerInfo{});
  for (int64_t r = 0; r < n_; ++r) driver_->Pull(r);
  job_cost_ = 0;
  driver_->Start();
  const double cost = static_cast<double>(n_) * config_.cost.message_s + job_cost_;
  server_busy_ = true;
  StartJob(kServerJob, cost, 1);
}

void Simulator::ServerReceive(int64_t slot) {
  inbox_.push_back(slot);
  if (!server_busy_) ServerNext();
}

void Simulator::ServerNext() {
  if (inbox_.empty() || finished_) {
    server_busy_ = false;
    return;
  }
  const int64_t slot = inbox_.front();
  inbox_.pop_front();
  Message message = std::move(messages_[static_cast<size_t>(slot)]);
  free_slots_.push_back(slot);
  server_busy_ = true;
  const int64_t w = message.worker;
  double cost = config_.cost.message_s;
  job_cost_ = 0;
  if (message.kind == MessageKind::kPull) {
    if (driver_->pull_pending(w)) {
      Fail("internal: worker " + std::to_string(w) + " pulled twice");
      return;
    }
    driver_->Pull(w);
    cost += job_cost_;
  } else {
    SimWorker& worker = workers_[static_cast<size_t>(w)];
    // The samples of a lazily computed step leave the worker's cursor in
    // push order, used or not, as they would have when it computed them.
    const bool local = mode_ == WorkerMode::kLocal || mode_ == WorkerMode::kLocalOverlap;
    if (!local) TakeSamples(worker, message.push.samples);
    driver_->Push(w, message.push, local ? Samples() : Samples(indices_));
    // The payload is checked (all finite) before anything else.
    cost += static_cast<double>(num_params_) * config_.cost.param_s + job_cost_;
  }
  StartJob(kServerJob, cost, 1);
}

void Simulator::Apply(double scale, bool with_optimizer) {
  optim::ApplyAccumulated(with_optimizer ? optimizer_.get() : nullptr, static_cast<float>(scale),
                          params_, accumulator_);
  const auto p = static_cast<double>(num_params_) * config_.cost.param_s;
  job_cost_ += (with_optimizer && config_.momentum > 0 ? 3 : 2) * p;
}

void Simulator::SendContinue(int64_t w, bool download, const sync::Reply& reply) {
  Message message;
  message.kind = MessageKind::kContinue;
  message.worker = w;
  message.download = download;
  message.token = reply.token;
  message.batch = reply.batch;
  outbox_.emplace_back(w, std::move(message));
}

void Simulator::SendSyncNow(int64_t w, int64_t round) {
  Message message;
  message.kind = MessageKind::kSyncNow;
  message.worker = w;
  message.round = round;
  outbox_.emplace_back(w, std::move(message));
}

void Simulator::Dropped(int64_t w, const sync::Drop& drop) {
  // A late push is wasted work the policy expects; any other drop means
  // the simulated worker broke the protocol, which is a bug here.
  if (!drop.late) Fail("internal: worker " + std::to_string(w) + "'s push dropped: " + drop.reason);
}

std::shared_ptr<const std::vector<float>> Simulator::CurrentSnapshot(double* cost) {
  // One copy per model version, shared by every reply and evaluation of it.
  if (snapshot_version_ != policy_->version() || snapshot_ == nullptr) {
    snapshot_ = std::make_shared<const std::vector<float>>(params_);
    snapshot_version_ = policy_->version();
    if (cost != nullptr) *cost += static_cast<double>(num_params_) * config_.cost.param_s;
  }
  return snapshot_;
}

void Simulator::SendModel(int64_t w, const sync::Reply& reply) {
  Message message;
  message.kind = MessageKind::kModel;
  message.worker = w;
  message.model = CurrentSnapshot(&job_cost_);
  message.version = reply.version;
  message.batch = reply.batch;
  message.token = reply.token;
  outbox_.emplace_back(w, std::move(message));
}

void Simulator::TakeSamples(SimWorker& worker, int64_t samples) {
  worker.cursor->Take(samples, &indices_);
  for (int64_t& i : indices_) i += worker.shard_first;
}

void Simulator::Stage(const sync::HandledPush<Samples>& push, double staged) {
  SimWorker& worker = workers_[static_cast<size_t>(push.worker)];
  const auto weight = static_cast<float>(staged);
  const auto n = static_cast<Eigen::Index>(num_params_);
  Vec acc(accumulator_.data(), n);
  switch (mode_) {
    case WorkerMode::kSync:
    case WorkerMode::kChunked:
    case WorkerMode::kToken:
      // The mean gradient over the samples the step took, on the model the
      // step ran on: what the worker would have sent.
      train_.Gather(push.payload, &x_, &y_);
      model_.LossAndGradient(*worker.model, x_, y_, grad_);
      acc += weight * ConstVec(grad_.data(), n);
      break;
    case WorkerMode::kLocal:
      // The step's delta, params_after - params_before = -lr * velocity; the
      // worker waits for this push's answer, so its velocity is still the step's.
      acc -= (weight * static_cast<float>(config_.lr)) * ConstVec(worker.velocity.data(), n);
      break;
    case WorkerMode::kLocalOverlap:
      acc += weight * ConstVec(worker.in_flight.data(), n);
      break;
  }
  job_cost_ += static_cast<double>(num_params_) * config_.cost.param_s;
}

void Simulator::ServerDone() {
  for (auto& [w, message] : outbox_) {
    const int64_t bytes = message.kind == MessageKind::kModel ? PayloadBytes() : kHeaderBytes;
    Send(ServerNode(), w, bytes, std::move(message));
  }
  outbox_.clear();
  // The job's iteration, if a push advanced it (a pull leaves it as it is).
  driver_->Advance();
  if (finished_) return;
  ServerNext();
}

void Simulator::Evaluate(bool /*must*/) {
  // The server's evaluation thread, evaluating at once: a snapshot is
  // stamped with the time it existed, so only its CPU use matters (shared cores).
  const model::EvalResult result = eval_model_.Evaluate(*CurrentSnapshot(nullptr), test_);
  const int64_t iteration = driver_->iteration();
  const int64_t samples = driver_->samples_applied();
  report_.curve.push_back({now_, iteration, samples, result.accuracy, result.loss});
  if (config_.shared_cores > 0) StartJob(kEvalJob, config_.cost.eval_s, 1);
  if (config_.target > 0 && result.accuracy >= config_.target && !report_.reached) {
    report_.reached = true;
    report_.seconds_to_target = now_;
    report_.iterations_to_target = iteration;
    report_.samples_to_target = samples;
    finished_ = true;
  }
}

// ---------------------------------------------------------------- workers

void Simulator::Pull(int64_t w) {
  SimWorker& worker = workers_[static_cast<size_t>(w)];
  Message pull;
  pull.kind = MessageKind::kPull;
  pull.worker = w;
  pull.clock = worker.clock;
  worker.wait_start = now_;
  Send(w, ServerNode(), kHeaderBytes, std::move(pull));
}

void Simulator::WorkerReceive(int64_t slot) {
  Message message = std::move(messages_[static_cast<size_t>(slot)]);
  free_slots_.push_back(slot);
  const int64_t w = message.worker;
  SimWorker& worker = workers_[static_cast<size_t>(w)];
  const auto n = static_cast<size_t>(num_params_);

  if (message.kind == MessageKind::kSyncNow) {
    worker.sync_round = std::max(worker.sync_round, message.round);
    return;
  }
  if (message.kind == MessageKind::kModel) {
    const bool download = mode_ == WorkerMode::kLocalOverlap && worker.phase != Phase::kAwaitModel;
    worker.stats.wait_s += now_ - worker.wait_start;
    worker.version = message.version;
    if (message.batch > 0) worker.batch = message.batch;
    worker.token = message.token;
    switch (mode_) {
      case WorkerMode::kSync:
      case WorkerMode::kChunked:
      case WorkerMode::kToken:
        worker.model = std::move(message.model);
        StartStep(w);
        break;
      case WorkerMode::kLocal:
        worker.params = *message.model;
        if (worker.velocity.empty()) worker.velocity.assign(n, 0.f);
        StartStep(w);
        break;
      case WorkerMode::kLocalOverlap:
        if (download) {
          // The communication thread hands it to the compute loop, which
          // adopts it when its current step ends.
          worker.downloaded = std::move(message.model);
          worker.has_download = true;
          worker.comm = CommPhase::kIdle;
          MaybeCommPush(w);
        } else {
          worker.params = *message.model;
          worker.velocity.assign(n, 0.f);
          worker.pending.assign(n, 0.f);
          worker.in_flight.assign(n, 0.f);
          StartStep(w);
        }
        break;
    }
    return;
  }
  // Continue.
  switch (mode_) {
    case WorkerMode::kLocal:
      worker.stats.wait_s += now_ - worker.wait_start;
      if (message.download) {
        worker.phase = Phase::kAwaitModel;
        Pull(w);
      } else {
        StartStep(w);
      }
      break;
    case WorkerMode::kLocalOverlap:
      // Its wait is not counted: the compute loop goes on meanwhile.
      if (message.download) {
        worker.comm = CommPhase::kAwaitModel;
        Pull(w);
      } else {
        worker.comm = CommPhase::kIdle;
        MaybeCommPush(w);
      }
      break;
    case WorkerMode::kToken:
      worker.stats.wait_s += now_ - worker.wait_start;
      worker.token = message.token;
      StartStep(w);
      break;
    case WorkerMode::kSync:
    case WorkerMode::kChunked:
      Fail("internal: worker " + std::to_string(w) + " in a sync mode got a Continue");
      break;
  }
}

double Simulator::DrawNoise(SimWorker& worker) {
  double factor = 1;
  if (worker.noise.jitter > 0) {
    // Box-Muller on our own uniforms: the same factors with any library.
    const double u1 = 1 - Uniform(worker.rng);  // (0, 1]
    const double u2 = Uniform(worker.rng);
    const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
    factor *= std::exp(worker.noise.jitter * z);
  }
  if (worker.noise.heavy_tail > 0) {
    const double u = 1 - Uniform(worker.rng);  // (0, 1]
    factor *= std::pow(u, -1 / worker.noise.heavy_tail);
  }
  return factor;
}

void Simulator::StartStep(int64_t w) {
  SimWorker& worker = workers_[static_cast<size_t>(w)];
  if (mode_ == WorkerMode::kLocalOverlap && worker.has_download) {
    // θ_local = θ_downloaded + the deltas computed since the last hand-over.
    const auto n = static_cast<Eigen::Index>(num_params_);
    Vec(worker.params.data(), n) =
        ConstVec(worker.downloaded->data(), n) + ConstVec(worker.pending.data(), n);
    worker.downloaded.reset();
    worker.has_download = false;
  }
  if (mode_ == WorkerMode::kToken && worker.token < 0) {
    Fail("internal: worker " + std::to_string(w) + " got no token to train");
    return;
  }
  worker.step = mode_ == WorkerMode::kLocalOverlap ? worker.compute_steps : worker.clock;
  worker.step_samples = 0;
  worker.step_compute = 0;
  worker.step_straggle = 0;
  worker.step_noise = DrawNoise(worker);
  StartChunk(w);
}

void Simulator::StartChunk(int64_t w) {
  SimWorker& worker = workers_[static_cast<size_t>(w)];
  int64_t samples = worker.batch;
  if (mode_ == WorkerMode::kChunked) {
    samples = std::min(config_.policy.chunk, worker.batch - worker.step_samples);
  } else if (mode_ == WorkerMode::kToken) {
    samples = config_.policy.token_size;
  }
  worker.job_samples = samples;
  worker.job_start = now_;
  worker.phase = Phase::kCompute;
  StartJob(w, config_.cost.StepSeconds(samples) * worker.step_noise,
           config_.cost.SharedSpeed(samples));
}

void Simulator::OnComputeDone(int64_t w) {
  SimWorker& worker = workers_[static_cast<size_t>(w)];
  // As worker.cc's Compute: the measured compute, then the emulated slowness
  // it implies (a step's later chunks scale only with the slowdown).
  const double compute = now_ - worker.job_start;
  const microseconds compute_us(std::llround(compute * 1e6));
  const microseconds straggle =
      worker.step_samples == 0
          ? worker.straggler->ExtraDelay(worker.step, compute_us)
          : microseconds(std::llround((worker.straggler->SlowdownAt(worker.step) - 1) *
                                      static_cast<double>(compute_us.count())));
  const double straggle_s = static_cast<double>(straggle.count()) * 1e-6;
  worker.step_samples += worker.job_samples;
  worker.step_compute += compute;
  worker.step_straggle += straggle_s;
  worker.stats.compute_s += compute;
  worker.stats.straggle_s += straggle_s;
  worker.phase = Phase::kStraggle;
  if (straggle_s > 0) {
    Schedule(now_ + straggle_s, EventKind::kWake, w, kComputeThread);
  } else {
    OnStraggleDone(w);
  }
}

void Simulator::OnStraggleDone(int64_t w) {
  SimWorker& worker = workers_[static_cast<size_t>(w)];
  switch (mode_) {
    case WorkerMode::kSync:
    case WorkerMode::kToken:
      StartPush(w);
      break;
    case WorkerMode::kChunked:
      // After each chunk the worker looks for SyncNow; told, it pushes what it has.
      if (worker.step_samples >= worker.batch || worker.sync_round >= worker.clock) {
        StartPush(w);
      } else {
        StartChunk(w);
      }
      break;
    case WorkerMode::kLocal:
    case WorkerMode::kLocalOverlap: {
      // The local optimizer step: momentum and parameters (2 passes), then
      // the delta and the base copy (local: 2) or the pending sum (overlap: 1).
      const double passes = mode_ == WorkerMode::kLocal ? 4 : 3;
      worker.phase = Phase::kUpdate;
      worker.job_start = now_;
      StartJob(w, passes * static_cast<double>(num_params_) * config_.cost.param_s, 1);
      break;
    }
  }
}

void Simulator::OnUpdateDone(int64_t w) {
  SimWorker& worker = workers_[static_cast<size_t>(w)];
  const double update = now_ - worker.job_start;
  worker.step_compute += update;
  worker.stats.compute_s += update;
  // The step's math: its gradient on the local model, then the local step.
  TakeSamples(worker, worker.step_samples);
  train_.Gather(indices_, &x_, &y_);
  model_.LossAndGradient(worker.params, x_, y_, grad_);
  const auto lr = static_cast<float>(config_.lr);
  optim::LocalMomentumStep(worker.params, worker.velocity, grad_, lr,
                           static_cast<float>(config_.momentum));
  if (mode_ == WorkerMode::kLocal) {
    StartPush(w);
    return;
  }
  // Overlap: the step moved the model by -lr * velocity; hand it over.
  const auto n = static_cast<Eigen::Index>(num_params_);
  Vec(worker.pending.data(), n) -= lr * ConstVec(worker.velocity.data(), n);
  ++worker.pending_steps;
  worker.pending_samples += worker.step_samples;
  worker.pending_busy += worker.step_compute + worker.step_straggle;
  ++worker.compute_steps;
  MaybeCommPush(w);
  StartStep(w);
}

void Simulator::StartPush(int64_t w) {
  SimWorker& worker = workers_[static_cast<size_t>(w)];
  sync::PushInfo& push = worker.outgoing;
  push = sync::PushInfo{};
  push.clock = worker.clock;
  push.base_version = worker.version;
  push.samples = worker.step_samples;
  push.batch = mode_ == WorkerMode::kToken ? config_.policy.token_size : worker.batch;
  push.busy_s = worker.step_compute + worker.step_straggle;
  push.cpu = push.busy_s > 0 ? worker.step_compute / push.busy_s : 0;
  const double transfer =
      static_cast<double>(worker.straggler->TransferTime(push.clock, PayloadBytes() - kHeaderBytes).count()) *
      1e-6;
  worker.stats.comm_s += transfer;
  worker.phase = Phase::kTransfer;
  if (transfer > 0) {
    Schedule(now_ + transfer, EventKind::kWake, w, kComputeThread);
  } else {
    OnTransferDone(w);
  }
}

void Simulator::OnTransferDone(int64_t w) {
  SimWorker& worker = workers_[static_cast<size_t>(w)];
  Message push;
  push.kind = MessageKind::kPush;
  push.worker = w;
  push.push = worker.outgoing;
  ++worker.stats.steps;
  worker.stats.samples += worker.outgoing.samples;
  ++worker.clock;
  Send(w, ServerNode(), PayloadBytes(), std::move(push));
  if (mode_ == WorkerMode::kSync || mode_ == WorkerMode::kChunked) {
    worker.phase = Phase::kAwaitModel;
    Pull(w);
  } else {
    worker.phase = Phase::kAwaitReply;
    worker.wait_start = now_;
  }
}

void Simulator::MaybeCommPush(int64_t w) {
  SimWorker& worker = workers_[static_cast<size_t>(w)];
  if (worker.comm != CommPhase::kIdle || worker.pending_steps == 0) return;
  worker.in_flight.swap(worker.pending);
  std::fill(worker.pending.begin(), worker.pending.end(), 0.f);
  sync::PushInfo& push = worker.outgoing;
  push = sync::PushInfo{};
  push.clock = worker.clock;
  push.base_version = worker.version;
  push.samples = worker.pending_samples;
  push.batch = worker.batch;
  push.busy_s = worker.pending_busy;
  worker.pending_steps = 0;
  worker.pending_samples = 0;
  worker.pending_busy = 0;
  const double transfer =
      static_cast<double>(worker.straggler->TransferTime(push.clock, PayloadBytes() - kHeaderBytes).count()) *
      1e-6;
  worker.stats.comm_s += transfer;
  worker.comm = CommPhase::kTransfer;
  if (transfer > 0) {
    Schedule(now_ + transfer, EventKind::kWake, w, kCommThread);
  } else {
    OnCommTransferDone(w);
  }
}

void Simulator::OnCommTransferDone(int64_t w) {
  SimWorker& worker = workers_[static_cast<size_t>(w)];
  Message push;
  push.kind = MessageKind::kPush;
  push.worker = w;
  push.push = worker.outgoing;
  ++worker.stats.steps;
  worker.stats.samples += worker.outgoing.samples;
  ++worker.clock;
  worker.comm = CommPhase::kAwaitContinue;
  Send(w, ServerNode(), PayloadBytes(), std::move(push));
}

}  // namespace

// ---------------------------------------------------------------- public

std::vector<std::string> ValidateSimConfig(const SimConfig& config) {
  std::vector<std::string> problems;
  const int64_t n = config.policy.num_workers;
  if (n < 1) problems.push_back("a run needs at least one worker");
  if (Result<std::unique_ptr<sync::Policy>> p = sync::MakePolicy(config.policy); !p.ok()) {
    problems.push_back("policy: " + p.status().message());
  }
  if (static_cast<int64_t>(config.stragglers.size()) != n) {
    problems.push_back("straggler profiles for " + std::to_string(config.stragglers.size()) +
                       " workers, not " + std::to_string(n));
  }
  for (size_t r = 0; r < config.stragglers.size(); ++r) {
    for (const std::string& p : worker::ValidateStragglerSpec(config.stragglers[r])) {
      problems.push_back("worker " + std::to_string(r) + ": " + p);
    }
  }
  if (!config.noise.empty() && static_cast<int64_t>(config.noise.size()) != n) {
    problems.push_back("noise for " + std::to_string(config.noise.size()) + " workers, not " +
                       std::to_string(n));
  }
  for (const Noise& noise : config.noise) {
    if (!(noise.jitter >= 0) || !std::isfinite(noise.jitter)) {
      problems.push_back("jitter must be a finite number of at least 0");
      break;
    }
    if (!(noise.heavy_tail == 0 || noise.heavy_tail > 1) || !std::isfinite(noise.heavy_tail)) {
      problems.push_back("heavy tail index must be 0 (none) or above 1");
      break;
    }
  }
  if (config.model.input_dim < 1 || config.model.classes < 2) {
    problems.push_back("the model has no input or fewer than two classes");
  }
  if (!(config.lr > 0) || !std::isfinite(config.lr)) problems.push_back("lr must be positive");
  if (!(config.momentum >= 0 && config.momentum < 1)) problems.push_back("momentum must be in [0, 1)");
  if (!(config.target >= 0 && config.target <= 1)) problems.push_back("target must be in [0, 1]");
  if (config.eval_every < 1) problems.push_back("eval_every must be at least 1");
  if (config.max_iterations < 0) problems.push_back("max_iterations must not be negative");
  if (!(config.max_seconds >= 0) || !std::isfinite(config.max_seconds)) {
    problems.push_back("max_seconds must not be negative");
  }
  if (config.target == 0 && config.max_iterations == 0 && config.max_seconds == 0) {
    problems.push_back("no end to a run: give a target, max_iterations or max_seconds");
  }
  if (!(config.network.link_gbps >= 0) || !std::isfinite(config.network.link_gbps)) {
    problems.push_back("link bandwidth must be a finite number of at least 0");
  }
  if (!(config.network.latency_s >= 0) || !std::isfinite(config.network.latency_s)) {
    problems.push_back("latency must be a finite number of at least 0");
  }
  const CostModel& cost = config.cost;
  if (cost.steps.empty()) problems.push_back("the cost model has no step times");
  for (size_t i = 0; i < cost.steps.size(); ++i) {
    const StepCost& s = cost.steps[i];
    if (s.samples < 1 || (i > 0 && s.samples <= cost.steps[i - 1].samples) ||
        !(s.seconds >= 0) || !std::isfinite(s.seconds) || !(s.shared_seconds >= 0) ||
        !std::isfinite(s.shared_seconds)) {
      problems.push_back("the cost model's step times must be finite, at increasing sample counts");
      break;
    }
  }
  for (double v : {cost.param_s, cost.message_s, cost.eval_s}) {
    if (!(v >= 0) || !std::isfinite(v)) {
      problems.push_back("the cost model's times must be finite and not negative");
      break;
    }
  }
  if (config.shared_cores < 0) problems.push_back("shared cores must not be negative");
  return problems;
}

Result<SimReport> Simulate(const SimConfig& config, const data::Dataset& train,
                           const data::Dataset& test) {
  if (std::vector<std::string> problems = ValidateSimConfig(config); !problems.empty()) {
    std::string text = problems.front();
    for (size_t i = 1; i < problems.size(); ++i) text += "; " + problems[i];
    return Status::InvalidArgument(text);
  }
  if (train.rows() == 0 || test.rows() == 0) {
    return Status::InvalidArgument("the simulation needs training and test samples");
  }
  if (train.dim != config.model.input_dim || test.dim != config.model.input_dim) {
    return Status::InvalidArgument("the data's " + std::to_string(train.dim) +
                                   " features do not fit the model's " +
                                   std::to_string(config.model.input_dim));
  }
  Simulator simulator(config, train, test);
  return simulator.Run();
}

bench::RunResult ToRunResult(const SimReport& report, const std::string& policy, int64_t repeat) {
  bench::RunResult r;
  r.policy = policy;
  r.repeat = repeat;
  r.reached = report.reached;
  r.seconds = report.reached ? report.seconds_to_target : report.seconds;
  r.iterations = report.reached ? report.iterations_to_target : report.iterations;
  r.samples = report.reached ? report.samples_to_target : report.samples;
  r.compute_ratio_mean = report.compute_ratio_mean;
  r.compute_ratio_min = report.compute_ratio_min;
  r.wait_share = report.wait_share;
  r.wasted_samples = report.wasted_samples;
  r.accuracy = report.curve.empty() ? 0 : report.curve.back().accuracy;
  r.failure = report.failure;
  return r;
}

}  // namespace dmlps::sim
