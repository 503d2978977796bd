// The discrete-event simulator. One event queue in virtual time; the server
// handles one message at a time as dmlps-server's loop does (the same
// policy driver carries out its policy's actions), and each worker is a
// SimWorker (sim/worker.h) stepping as dmlps-worker's loop for its mode
// does. Messages travel through SimNetwork; CPU jobs run on a machine each
// or on shared cores (SimCpu).
#include "dmlps/sim/sim.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <memory>
#include <optional>

#include "dmlps/bench/run_limits.h"
#include "dmlps/optim/optimizer.h"
#include "dmlps/server/server.h"
#include "dmlps/sync/driver.h"
#include "dmlps/sync/registry.h"
#include "dmlps/sync/summary.h"
#include "dmlps/sync/switching.h"
#include "sim/cpu.h"
#include "sim/events.h"
#include "sim/message.h"
#include "sim/network.h"
#include "sim/shards.h"
#include "sim/worker.h"

namespace dmlps::sim {
namespace {

// Job targets beside workers (>= 0).
constexpr int64_t kServerJob = -1;
constexpr int64_t kEvalJob = -2;
// Copying message slot s (NetworkModel::cores_copy) is job kMessageJob - s.
constexpr int64_t kMessageJob = -3;

class Simulator : private sync::ReplySink,
                  private sync::UpdateSink<Samples>,
                  private sync::RunEvents,
                  private WorkerHost,
                  private ShardHost {
 public:
  Simulator(const SimConfig& config, const data::Dataset& train, const data::Dataset& test)
      : config_(config),
        train_(train),
        test_(test),
        n_(config.job.workers),
        network_(config.network, n_, config.network.cores_copy && config.shared_cores > 0,
                 {[this](double time, int64_t slot, bool to_server) {
                    Schedule(time, to_server ? EventKind::kAtServer : EventKind::kAtWorker, slot);
                  },
                  [this](int64_t slot, double work) { StartJob(kMessageJob - slot, work, 1); }},
                 config.shards),
        cpu_(std::max<int64_t>(config.shared_cores, 1),
             {config.cpu_slice_s, config.cpu_wake_preempts, config.cpu_wake_credit_s},
             [this](double time, uint64_t generation) {
               Schedule(time, EventKind::kCpuTick, 0, generation);
             }),
        math_(config.model, train, config.threads, config.math),
        eval_model_(config.model) {}

  Result<SimReport> Run();

 private:
  Status Setup();
  void Schedule(double time, EventKind kind, int64_t a, uint64_t b = 0);
  void Dispatch(const Event& event);

  // The network: messages wait in slots of messages_ while network_ carries them.
  // `aside`: SimNetwork::SendAside.
  void Send(int64_t from, int64_t to, int64_t bytes, Message message, bool aside = false);
  // The message in `slot` arrived at its worker.
  void WorkerReceive(int64_t slot);
  int64_t ServerNode() const { return n_; }
  // Shard 0's model replies: its slice, or the whole model, weighing what
  // the real model's would when a timing-only run computes on a stand-in
  // (SimConfig::payload_params; its param_s is scaled instead).
  // `codec`: the push codec or the pull codec (SimConfig).
  int64_t PayloadBytes(const compress::Codec& codec) const {
    if (shards_) return MessageBytes(codec, SliceParams());
    return MessageBytes(codec, config_.payload_params > 0 ? config_.payload_params : num_params_);
  }
  // The parameters of shard 0's slice (the whole model with one shard).
  int64_t SliceParams() const { return shards_ ? shards_->SliceParams(0) : num_params_; }

  // The processor(s): a machine each, or cores shared (cpu_).
  // Job `target` (a worker's, >= 0, or kServerJob, kEvalJob, a message's).
  void StartJob(int64_t target, double work, double shared_speed) override;
  void OnCpuTick(uint64_t generation);
  void OnJobDone(int64_t target);

  // The server.
  void StartTraining();
  void ServerReceive(int64_t slot);
  void ServerNext();
  std::shared_ptr<const std::vector<float>> CurrentSnapshot(double* cost);
  void ServerDone();
  // The driver's sinks: what the policy's actions do to the simulated
  // server. Each adds the server time it takes to job_cost_.
  void Stage(const sync::HandledPush<Samples>& push, double weight) override;
  void Apply(double scale, bool with_optimizer, int64_t version) override;
  void SendModel(int64_t w, const sync::Reply& reply) override;
  void SendContinue(int64_t w, bool download, const sync::Reply& reply) override;
  void SendSyncNow(int64_t w, int64_t round) override;
  void Dropped(int64_t w, const sync::Drop& drop) override;
  void Evaluate(bool must) override;
  void LimitReached() override { finished_ = true; }
  void Switched(const sync::Switch& change) override { report_.switches.push_back({now_, change}); }
  void Decided(const sync::Decision& decision) override {
    report_.decisions.push_back({now_, decision});
  }

  // What the workers ask for (WorkerHost).
  double now() const override { return now_; }
  void Wake(int64_t w, double time, WorkerThread thread) override {
    Schedule(time, EventKind::kWake, w, static_cast<uint64_t>(thread));
  }
  void SendToServer(int64_t w, int64_t bytes, Message message) override {
    bytes_sent_[static_cast<size_t>(w)] += bytes;
    if (shards_ && message.kind == MessageKind::kPush) {
      SendPushSlices(w, std::move(message));
    } else {
      Send(w, ServerNode(), bytes, std::move(message));
    }
  }
  void Fail(std::string why) override;

  // The shards beyond 0 (ShardHost). Their jobs are targets n_ + k - 1.
  void StartShardJob(int64_t k, double work) override { StartJob(n_ + k - 1, work, 1); }
  void SendFromShard(int64_t k, int64_t w, int64_t bytes, Message message) override {
    Send(ServerNode() + k, w, bytes, std::move(message));
  }
  // Sends shard 0's orders of the job just done to the other shards.
  void SendOrders();
  // Sends worker w's push to the server: with shards, each its slice,
  // the others first and shard 0 last, as dmlps-worker sends it.
  void SendPushSlices(int64_t w, Message message);

  const SimConfig& config_;
  const data::Dataset& train_;
  const data::Dataset& test_;
  const int64_t n_;

  EventQueue queue_;
  double now_ = 0;
  int64_t events_ = 0;
  bool finished_ = false;

  std::vector<Message> messages_;
  std::vector<int64_t> bytes_sent_;    // by worker: headers and payloads sent the server
  std::vector<double> staleness_sum_;  // by worker: WorkerStats::staleness_sum
  std::vector<int64_t> free_slots_;
  SimNetwork network_;
  SimCpu cpu_;  // shared cores only

  // The server.
  std::optional<sync::PolicyDriver<Samples>> driver_;
  const sync::Policy* policy_ = nullptr;  // the driver's
  std::unique_ptr<optim::Optimizer> optimizer_;
  sync::ServerOptimizer step_;  // the settings optimizer_ was made with
  int64_t num_params_ = 0;
  std::vector<float> params_;
  std::vector<float> accumulator_;
  std::shared_ptr<const std::vector<float>> snapshot_;
  int64_t snapshot_version_ = -1;
  std::deque<int64_t> inbox_;
  bool server_busy_ = false;
  double job_cost_ = 0;  // the server time the sinks' effects took in the job under way
  std::vector<std::pair<int64_t, Message>> outbox_;
  // Sharded (config_.shards > 1): the other shards, shard 0's orders for
  // them from the job under way, whether the push being handled was staged
  // or dropped, and per worker the model slices arrived and shard 0's.
  std::optional<SimShards> shards_;
  std::vector<ShardOrder> orders_;
  bool push_decided_ = false;
  std::vector<int64_t> slices_in_;
  std::vector<Message> assembling_;

  StepMath math_;  // the workers'
  model::Model eval_model_;

  std::vector<SimWorker> workers_;
  SimReport report_;
};

// ---------------------------------------------------------------- setup

Status Simulator::Setup() {
  DMLPS_ASSIGN_OR_RETURN(std::unique_ptr<sync::Policy> policy,
                         config_.make_policy
                             ? config_.make_policy(sync::WithJob(config_.policy, config_.job))
                             : sync::MakePolicy(sync::WithJob(config_.policy, config_.job)));
  driver_.emplace(std::move(policy),
                  sync::DriverOptions{.eval_every = config_.job.eval_every,
                                      .max_iterations = config_.job.max_iterations},
                  sync::DriverSinks<Samples>{.replies = *this, .updates = *this, .events = *this});
  policy_ = &driver_->policy();
  if (const auto* switching = dynamic_cast<const sync::SwitchingPolicy*>(policy_)) {
    report_.started_under = switching->running();
  }
  bytes_sent_.assign(static_cast<size_t>(n_), 0);
  staleness_sum_.assign(static_cast<size_t>(n_), 0);
  num_params_ = math_.model.num_params();
  params_.assign(static_cast<size_t>(num_params_), 0.f);
  math_.model.Initialize(config_.job.seed, params_);
  accumulator_.assign(params_.size(), 0.f);
  // As the server: local-SGD policies step the model with their outer optimizer.
  step_ = sync::ServerOptimizerFor(config_.policy, config_.job.lr, config_.job.momentum);
  DMLPS_ASSIGN_OR_RETURN(optimizer_, optim::MakeOptimizer(step_.lr, step_.momentum, step_.nesterov,
                                                          step_.momentum_every, num_params_));

  if (config_.shards > 1) {
    shards_.emplace(server::ShardBounds(num_params_, config_.shards), n_, config_.cost,
                    config_.pull_codec, static_cast<ShardHost&>(*this));
    slices_in_.assign(static_cast<size_t>(n_), 0);
    assembling_.resize(static_cast<size_t>(n_));
  }
  workers_.reserve(static_cast<size_t>(n_));
  for (int64_t r = 0; r < n_; ++r) {
    const std::pair<int64_t, int64_t> shard = data::ShardRange(train_.rows(), {r, n_});
    if (shard.second <= shard.first) {
      return Status::InvalidArgument(std::to_string(n_) + " workers but only " +
                                     std::to_string(train_.rows()) + " training samples: worker " +
                                     std::to_string(r) + "'s shard is empty");
    }
    workers_.emplace_back(config_, policy_->mode(), r, shard, math_,
                          static_cast<WorkerHost&>(*this));
  }
  return Status::Ok();
}

Result<SimReport> Simulator::Run() {
  const auto wall_start = std::chrono::steady_clock::now();
  DMLPS_RETURN_IF_ERROR(Setup());
  if (config_.job.max_seconds > 0) Schedule(config_.job.max_seconds, EventKind::kTimeLimit, 0);
  StartTraining();
  while (!finished_ && !queue_.empty()) {
    const Event event = queue_.Pop();
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
    report_.workers.push_back(w.stats());
    const WorkerStats& stats = report_.workers.back();
    report_.workers.back().staleness_sum = staleness_sum_[totals.size()];
    totals.push_back({.steps = stats.steps,
                      .samples = stats.samples,
                      .compute_s = stats.compute_s,
                      .straggle_s = stats.straggle_s,
                      .wait_s = stats.wait_s,
                      .bytes_sent = bytes_sent_[totals.size()]});
  }
  const sync::RunSummary summary = sync::Summarize(totals, now_);
  report_.compute_ratio_mean = summary.compute_ratio_mean;
  report_.compute_ratio_min = summary.compute_ratio_min;
  report_.wait_share = summary.wait_share;
  report_.bytes_per_worker = summary.bytes_sent_mean;
  report_.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return std::move(report_);
}

void Simulator::Schedule(double time, EventKind kind, int64_t a, uint64_t b) {
  queue_.Schedule(time, kind, a, b);
}

void Simulator::Dispatch(const Event& event) {
  switch (event.kind) {
    case EventKind::kAtServer:
      ServerReceive(event.a);
      break;
    case EventKind::kAtWorker:
      WorkerReceive(event.a);
      break;
    case EventKind::kJobDone:
      OnJobDone(event.a);
      break;
    case EventKind::kCpuTick:
      OnCpuTick(event.b);
      break;
    case EventKind::kWake:
      workers_[static_cast<size_t>(event.a)].OnWake(static_cast<WorkerThread>(event.b));
      break;
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

void Simulator::Send(int64_t from, int64_t to, int64_t bytes, Message message, bool aside) {
  int64_t slot;
  if (free_slots_.empty()) {
    slot = static_cast<int64_t>(messages_.size());
    messages_.push_back(std::move(message));
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
    messages_[static_cast<size_t>(slot)] = std::move(message);
  }
  if (aside) {
    network_.SendAside(now_, from, to, bytes, slot);
  } else {
    network_.Send(now_, from, to, bytes, slot);
  }
}

void Simulator::WorkerReceive(int64_t slot) {
  Message message = std::move(messages_[static_cast<size_t>(slot)]);
  free_slots_.push_back(slot);
  const auto w = static_cast<size_t>(message.worker);
  if (shards_ && message.kind == MessageKind::kModel) {
    // The worker puts the model together from every shard's slice.
    if (message.shard == 0) assembling_[w] = std::move(message);
    if (++slices_in_[w] < config_.shards) return;
    slices_in_[w] = 0;
    message = std::move(assembling_[w]);
  }
  workers_[w].Receive(std::move(message));
}

void Simulator::SendPushSlices(int64_t w, Message message) {
  for (int64_t k = 1; k < config_.shards; ++k) {
    Message slice;
    slice.kind = MessageKind::kPush;
    slice.worker = w;
    slice.shard = k;
    Send(w, ServerNode() + k, MessageBytes(config_.push_codec, shards_->SliceParams(k)),
         std::move(slice));
  }
  Send(w, ServerNode(), PayloadBytes(config_.push_codec), std::move(message));
}

void Simulator::SendOrders() {
  if (!shards_ || orders_.empty()) return;
  auto orders = std::make_shared<const std::vector<ShardOrder>>(std::move(orders_));
  orders_.clear();
  const auto bytes = kHeaderBytes + kOrderBytes * static_cast<int64_t>(orders->size());
  for (int64_t k = 1; k < config_.shards; ++k) {
    Message message;
    message.kind = MessageKind::kOrders;
    message.shard = k;
    message.orders = orders;
    Send(ServerNode(), ServerNode() + k, bytes, std::move(message), /*aside=*/true);
  }
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
  if (target >= n_) {
    shards_->JobDone(target - n_ + 1);
    return;
  }
  workers_[static_cast<size_t>(target)].OnJobDone();
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
  if (const int64_t k = messages_[static_cast<size_t>(slot)].shard; k > 0) {
    Message message = std::move(messages_[static_cast<size_t>(slot)]);
    free_slots_.push_back(slot);
    shards_->Receive(k, std::move(message));
    return;
  }
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
    // The samples of a lazily computed step leave the worker's cursor in
    // push order, used or not, as they would have when it computed them.
    push_decided_ = false;
    staleness_sum_[static_cast<size_t>(w)] +=
        static_cast<double>(policy_->version() - message.push.base_version);
    driver_->Push(w, message.push, workers_[static_cast<size_t>(w)].SamplesOf(message.push));
    // A push neither staged nor dropped contributes nothing: the other shards free it.
    if (shards_ && !push_decided_) orders_.push_back({ShardOrder::Kind::kDiscard, w, 0});
    // The payload is checked (all finite) before anything else.
    cost += static_cast<double>(SliceParams()) * config_.cost.param_s + job_cost_;
  }
  StartJob(kServerJob, cost, 1);
}

void Simulator::Apply(double scale, bool with_optimizer, int64_t /*version*/) {
  optim::ApplyAccumulated(with_optimizer ? optimizer_.get() : nullptr, static_cast<float>(scale),
                          params_, accumulator_);
  const auto p = static_cast<double>(SliceParams()) * config_.cost.param_s;
  // Momentum reads and writes its velocity too; Nesterov's form once more.
  double passes = 2;
  if (with_optimizer && step_.momentum > 0) passes = step_.nesterov ? 4 : 3;
  // Delayed momentum: the model and the buffer each step, the momentum's
  // part (3 more passes) once every momentum_every steps.
  if (with_optimizer && step_.momentum > 0 && step_.momentum_every > 1) {
    passes = 3 + 3.0 / static_cast<double>(step_.momentum_every);
  }
  job_cost_ += passes * p;
  if (shards_) orders_.push_back({ShardOrder::Kind::kApply, -1, passes});
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
  push_decided_ = true;
  if (shards_) orders_.push_back({ShardOrder::Kind::kDiscard, w, 0});
  // A late push is wasted work the policy expects; any other drop means
  // the simulated worker broke the protocol, which is a bug here.
  if (!drop.late) Fail("internal: worker " + std::to_string(w) + "'s push dropped: " + drop.reason);
}

std::shared_ptr<const std::vector<float>> Simulator::CurrentSnapshot(double* cost) {
  // One copy per model version, shared by every reply and evaluation of it.
  if (snapshot_version_ != policy_->version() || snapshot_ == nullptr) {
    snapshot_ = std::make_shared<const std::vector<float>>(params_);
    snapshot_version_ = policy_->version();
    if (cost != nullptr) *cost += static_cast<double>(SliceParams()) * config_.cost.param_s;
  }
  return snapshot_;
}

void Simulator::SendModel(int64_t w, const sync::Reply& reply) {
  Message message;
  message.kind = MessageKind::kModel;
  message.worker = w;
  const bool fresh = snapshot_version_ != policy_->version() || snapshot_ == nullptr;
  message.model = CurrentSnapshot(&job_cost_);
  // Every shard sends its slice as it stands after the orders before.
  if (shards_) orders_.push_back({ShardOrder::Kind::kReply, w, fresh ? 1.0 : 0.0});
  message.version = reply.version;
  message.batch = reply.batch;
  message.token = reply.token;
  message.local_steps = reply.local_steps;
  outbox_.emplace_back(w, std::move(message));
}

void Simulator::Stage(const sync::HandledPush<Samples>& push, double weight) {
  workers_[static_cast<size_t>(push.worker)].AddPush(push.payload, static_cast<float>(weight),
                                                     accumulator_);
  job_cost_ += static_cast<double>(SliceParams()) * config_.cost.param_s;
  push_decided_ = true;
  if (shards_) orders_.push_back({ShardOrder::Kind::kStage, push.worker, 1});
}

void Simulator::ServerDone() {
  // As the server's loop: the orders of what it handled go out once nothing
  // more waits, and before the replies: a real link shares itself among its
  // connections, so a few bytes of orders are through long before a model is.
  if (inbox_.empty()) SendOrders();
  for (auto& [w, message] : outbox_) {
    const int64_t bytes =
        message.kind == MessageKind::kModel ? PayloadBytes(config_.pull_codec) : kHeaderBytes;
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
  if (config_.on_eval) config_.on_eval(report_.curve.back());
  if (config_.shared_cores > 0) StartJob(kEvalJob, config_.cost.eval_s, 1);
  if (config_.job.target_accuracy > 0 && result.accuracy >= config_.job.target_accuracy &&
      !report_.reached) {
    report_.reached = true;
    report_.seconds_to_target = now_;
    report_.iterations_to_target = iteration;
    report_.samples_to_target = samples;
    finished_ = true;
    return;
  }
  // As the server: policies that decide by accuracy (sync-switch) see it.
  driver_->Evaluated(result.accuracy);
}

}  // namespace

// ---------------------------------------------------------------- public

// ValidateSimConfig speaks of the run's limits as SimConfig's fields.
constexpr bench::RunLimitNames kFieldNames = {
    "target", "eval_every", "max_iterations", "max_seconds",
    "no end to a run: give a target, max_iterations or max_seconds"};

std::vector<std::string> ValidateSimConfig(const SimConfig& config) {
  std::vector<std::string> problems;
  const int64_t n = config.job.workers;
  if (n < 1) problems.push_back("a run needs at least one worker");
  if (Status s = sync::CheckPolicy(sync::WithJob(config.policy, config.job)); !s.ok()) {
    problems.push_back("policy: " + s.message());
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
  if (!(config.job.lr > 0) || !std::isfinite(config.job.lr))
    problems.push_back("lr must be positive");
  if (!(config.job.momentum >= 0 && config.job.momentum < 1))
    problems.push_back("momentum must be in [0, 1)");
  bench::CheckRunLimits({config.job.target_accuracy, config.job.eval_every,
                         config.job.max_iterations, config.job.max_seconds},
                        kFieldNames, &problems);
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
    if (s.samples < 1 || (i > 0 && s.samples <= cost.steps[i - 1].samples) || !(s.seconds >= 0) ||
        !std::isfinite(s.seconds) || !(s.shared_seconds >= 0) || !std::isfinite(s.shared_seconds)) {
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
  if (!(config.cpu_slice_s >= 0) || !std::isfinite(config.cpu_slice_s)) {
    problems.push_back("the CPU slice must be a finite time, not negative");
  } else if (config.cpu_slice_s > 0 && config.shared_cores == 0) {
    problems.push_back("a CPU slice needs shared cores");
  }
  if (config.cpu_wake_preempts && !(config.cpu_slice_s > 0)) {
    problems.push_back("preemption on wake-up needs a CPU slice");
  }
  if (!(config.cpu_wake_credit_s >= 0) || !std::isfinite(config.cpu_wake_credit_s)) {
    problems.push_back("the wake-up credit must be a finite time, not negative");
  } else if (config.cpu_wake_credit_s > 0 && !(config.cpu_slice_s > 0)) {
    problems.push_back("a wake-up credit needs a CPU slice");
  }
  if (config.threads < 1) problems.push_back("the simulation needs at least one thread");
  for (const compress::Codec* codec : {&config.push_codec, &config.pull_codec}) {
    if (Status s = compress::ValidateCodec(*codec); !s.ok()) {
      problems.push_back((codec == &config.push_codec ? "push codec: " : "pull codec: ") +
                         s.message());
    }
  }
  if (config.shards < 1 || config.shards > 1024) {
    problems.push_back("server shards must be 1 to 1024");
  } else if (config.model.input_dim >= 1 && config.model.classes >= 2 &&
             config.shards > model::Model(config.model).num_params()) {
    problems.push_back("more server shards than the model has parameters");
  }
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

namespace {

// The policies a switching run ran, in turn, from its start to `end`: each
// up to the next switch done (a span of no iterations left out).
std::vector<bench::PolicySpan> RanUnder(const SimReport& report, int64_t end) {
  std::vector<bench::PolicySpan> spans;
  if (report.started_under.empty()) return spans;
  std::string running = report.started_under;
  int64_t from = 0;
  for (const SimSwitch& s : report.switches) {
    if (!s.change.done || s.change.iteration > end) continue;
    if (s.change.iteration > from) spans.push_back({running, s.change.iteration - from});
    running = s.change.to;
    from = s.change.iteration;
  }
  if (end > from) spans.push_back({running, end - from});
  return spans;
}

}  // namespace

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
  r.bytes_per_worker = report.bytes_per_worker;
  r.wasted_samples = report.wasted_samples;
  r.accuracy = report.curve.empty() ? 0 : report.curve.back().accuracy;
  r.failure = report.failure;
  r.ran_under = RanUnder(report, r.iterations);
  return r;
}

}  // namespace dmlps::sim
