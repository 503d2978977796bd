#include "dmlps/server/server.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <optional>

#include "dmlps/data/dataset.h"
#include "dmlps/net/curve.h"
#include "dmlps/net/endpoint.h"
#include "dmlps/optim/optimizer.h"
#include "dmlps/proto/codec.h"
#include "dmlps/server/checkpoint.h"
#include "dmlps/sync/driver.h"
#include "dmlps/sync/summary.h"
#include "dmlps/trace/trace.h"
#include "server/checkpoint_writer.h"
#include "server/coordinator.h"
#include "server/evaluation_log.h"
#include "server/evaluator.h"
#include "server/loop.h"
#include "server/model_store.h"
#include "server/shard.h"

namespace dmlps::server {
namespace {

using std::chrono::milliseconds;

// A worker loading its data sends nothing: before its first pull it is
// given at least this long.
constexpr milliseconds kLoadAllowance{60000};
// The most ranks a running job hands out.
constexpr int64_t kMaxRanks = 100000;

std::string Hex(const zmq::message_t& identity) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  const auto* bytes = static_cast<const unsigned char*>(identity.data());
  for (size_t i = 0; i < identity.size() && i < 8; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 15];
  }
  return out;
}

std::string Key(const zmq::message_t& identity) { return IdentityKey(identity); }

// A push's payload as the server holds it: null when it was refused.
using Gradient = std::shared_ptr<proto::IncomingTensor>;

struct Member {
  zmq::message_t identity;
  std::string host;
  int64_t pid = 0;
  bool ready = false;         // it pulled once: its data is loaded
  Clock::time_point last_seen;  // when it was last heard from
  // The payload of the worker's last push while its chunks are still coming.
  std::shared_ptr<proto::IncomingTensor> incoming;
  int64_t incoming_clock = 0;
  Clock::time_point incoming_at;  // when its last chunk (or header) arrived
  Clock::time_point replied_at;  // when the last model reply was queued; epoch: none yet
  sync::WorkerTotals totals;     // what it reported, for the closing summary
};

// The policy's decisions reach the model store, the workers and (sharded)
// the other shards through the driver's sink, below.
class ParameterServer : private sync::DriverSink<Gradient> {
 public:
  ParameterServer(const ServerConfig& config, std::ostream& tsv, const std::atomic<int>* signal)
      : config_(config), tsv_(tsv), signal_(signal) {}

  Result<RunReport> Run();

 private:
  Status Setup();
  void HandleFrames(net::Frames& frames);
  void HandleHello(const zmq::message_t& identity, const proto::Hello& hello);
  // Makes the sender of `hello` the member of rank `rank`.
  void Admit(const zmq::message_t& identity, const proto::Hello& hello, int64_t rank);
  void HandlePull(int64_t rank, const proto::Pull& pull);
  void HandlePush(int64_t rank, const proto::Push& push, net::Frames& payload);
  void Start();
  void HandleChunk(int64_t rank, const proto::Chunk& chunk, net::Frames& payload);
  // The worker's streamed push will get no more chunks: what is missing is left out.
  void AbandonIncoming(Member& member, const std::string& why);
  void CloseStalledStreams();
  // Before the run ends: lets the streams in flight finish, for at most `limit`.
  void DrainStreams(milliseconds limit);
  // The driver's sink: what the policy's actions do here.
  void Stage(const sync::HandledPush<Gradient>& push, double weight) override;
  void Apply(double scale, bool with_optimizer) override;
  void SendModel(int64_t rank, const sync::Reply& reply) override;
  void SendContinue(int64_t rank, bool download, const sync::Reply& reply) override;
  void SendSyncNow(int64_t rank, int64_t round) override;
  void Dropped(int64_t rank, const sync::Drop& drop) override;
  void Evaluate(bool must) override { SubmitSnapshot(must); }
  void LimitReached() override;
  void IterationAdvanced() override { MaybeCheckpoint(); }
  void HoldChanged(bool holding, int64_t live) override;
  // Queues the current model for evaluation; `must` ones are never skipped.
  void SubmitSnapshot(bool must);
  void CollectEvaluations();
  void Refuse(const zmq::message_t& identity, const std::string& who, const std::string& why,
              bool fatal, bool rejoin = false);
  void SendHeartbeats();
  // Goes on without worker `rank`: the policy stops waiting for it.
  void LoseWorker(int64_t rank, const std::string& why);
  // Loses the workers silent for longer than --worker-timeout.
  void CheckSilence();
  // Loads --resume into the model, the optimizer and the policy.
  Status Resume(std::vector<float>* params);
  // The names this run's checkpoints record, which one resumed must match.
  CheckpointIdentity Identity() const;
  // Hands a checkpoint to the writer when one is due and every update
  // queued has been applied.
  void MaybeCheckpoint();
  // At the end: writes the checkpoint pending and reports what was written.
  void FinishCheckpoints();
  void StopWorkers(const std::string& reason);
  double Seconds() const;
  bool Finished() const;

  // Sharded servers: this is shard 0, which tells the others (shards_)
  // what the policy decided, translated into orders.
  bool sharded() const { return config_.shard_count > 1; }
  void Order(proto::Order order) { shards_->Order(order); }
  // Hands a whole snapshot to the evaluator; counts it when skipped.
  void Evaluate(Snapshot snapshot, bool must);
  // Writes --save-model: the parameters this shard holds.
  Status SaveModel();
  // Sets up shards_, once the endpoint is bound.
  void StartCoordinator();

  const ServerConfig& config_;
  std::ostream& tsv_;
  const std::atomic<int>* signal_;

  zmq::context_t context_;
  std::optional<net::Endpoint> endpoint_;
  // The policy and what it decided per worker; policy_ is its policy, to read.
  std::optional<sync::PolicyDriver<Gradient>> driver_;
  const sync::Policy* policy_ = nullptr;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::optional<model::ModelSpec> spec_;
  std::unique_ptr<Evaluator> evaluator_;
  std::unique_ptr<trace::TraceWriter> tracer_;  // null without --trace
  int64_t start_us_ = 0;                         // the run's start, µs since the Unix epoch

  // The model and the accumulator; streamed pushes and replies pipeline in it.
  std::optional<ModelStore> store_;

  std::vector<std::optional<Member>> members_;  // by rank; as many as the policy's ranks
  std::map<std::string, int64_t> rank_of_;      // identity bytes -> rank
  int64_t joined_ = 0;
  bool started_ = false;
  Clock::time_point start_;
  Clock::time_point last_heartbeat_;

  int64_t refusals_ = 0;
  int64_t max_message_bytes_ = 0;
  int64_t skipped_snapshots_ = 0;
  RunReport report_;

  std::unique_ptr<CheckpointWriter> checkpoints_;  // null without --checkpoint
  int64_t last_checkpoint_iteration_ = -1;
  Clock::time_point last_checkpoint_at_;
  double checkpoint_path_ms_ = 0;  // time the training thread spent on checkpoints
  double seconds_before_ = 0;      // training time before --resume

  // Sharded servers (see sharded()).
  std::vector<int64_t> bounds_;               // where the slices begin, plus the end
  std::unique_ptr<ShardCoordinator> shards_;  // set once bound; with one shard, idle
  // --deterministic: the stages since the last apply, summed at the next.
  struct HeldStage {
    int64_t worker = 0;
    int64_t clock = 0;  // the worker's own
    double weight = 0;
    std::shared_ptr<proto::IncomingTensor> gradient;
  };
  std::vector<HeldStage> held_stages_;
};

Status ParameterServer::Setup() {
  // Keys first: a bad key file should not wait for the data to load.
  net::BindOptions bind_options;
  if (!config_.curve_secret.empty()) {
    DMLPS_ASSIGN_OR_RETURN(net::CurveKeyPair pair, net::ReadSecretKeyFile(config_.curve_secret));
    DMLPS_ASSIGN_OR_RETURN(bind_options.allowed_keys, net::ReadAllowedKeys(config_.curve_allow));
    bind_options.curve_secret = pair.secret_key;
    spdlog::info("CURVE on: server key {}, {} worker key{} admitted from {}", pair.public_key,
                 bind_options.allowed_keys.size(), bind_options.allowed_keys.size() == 1 ? "" : "s",
                 config_.curve_allow);
  }
  DMLPS_ASSIGN_OR_RETURN(data::DataSpec data_spec, data::ParseDataSpec(config_.data));
  DMLPS_ASSIGN_OR_RETURN(data::Dataset test_set, data::LoadTest(data_spec));
  if (test_set.rows() == 0) return Status::DataLoss(config_.data + ": the test set is empty");
  DMLPS_ASSIGN_OR_RETURN(model::ModelSpec spec,
                         model::ParseModelSpec(config_.model, test_set.dim,
                                               std::max<int64_t>(test_set.classes, 2)));
  spec_ = spec;
  model::Model model(spec);
  std::vector<float> params(model.num_params(), 0.f);
  model.Initialize(config_.seed, params);
  if (config_.shard_count > model.num_params()) {
    return Status::InvalidArgument("--shard: " + std::to_string(model.num_params()) +
                                   " parameters cannot be cut into " +
                                   std::to_string(config_.shard_count) + " shards");
  }
  // Every shard initializes the whole model the same way and keeps its
  // slice; this one holds the first.
  bounds_ = ShardBounds(model.num_params(), config_.shard_count);
  params.resize(static_cast<size_t>(bounds_[1]));
  DMLPS_ASSIGN_OR_RETURN(optimizer_, optim::MakeOptimizer(config_.lr, config_.momentum,
                                                         static_cast<int64_t>(params.size())));
  sync::PolicyConfig policy_config = config_.policy;
  policy_config.num_workers = config_.workers;
  policy_config.batch = config_.batch;
  DMLPS_ASSIGN_OR_RETURN(std::unique_ptr<sync::Policy> policy, sync::MakePolicy(policy_config));
  driver_.emplace(std::move(policy),
                  sync::DriverOptions{.eval_every = config_.eval_every,
                                      .max_iterations = config_.max_iterations,
                                      .min_workers = config_.min_workers},
                  static_cast<sync::DriverSink<Gradient>&>(*this));
  policy_ = &driver_->policy();
  if (!config_.resume.empty()) DMLPS_RETURN_IF_ERROR(Resume(&params));
  store_.emplace(std::move(params),
                 proto::kDefaultChunkBytes / static_cast<int64_t>(sizeof(float)), config_.threads);
  if (!config_.checkpoint.empty()) checkpoints_ = std::make_unique<CheckpointWriter>(config_.checkpoint);
  spdlog::info("model {} ({} parameters), policy {} (workers: {}), {} on {} test samples",
               spec.Name(), model.num_params(), policy_->Name(),
               sync::WorkerModeName(policy_->mode()), optimizer_->Name(), test_set.rows());
  if (sharded()) {
    spdlog::info("shard 0 of {}: parameters [0, {}); waiting for the other shards", config_.shard_count,
                 bounds_[1]);
  }
  evaluator_ = std::make_unique<Evaluator>(spec, std::move(test_set));
  members_.resize(config_.workers);

  if (!config_.trace.empty()) {
    DMLPS_ASSIGN_OR_RETURN(tracer_, trace::TraceWriter::Open(config_.trace, "server-0"));
  }
  const int64_t model_bytes = model.num_params() * static_cast<int64_t>(sizeof(float));
  // The largest payload a worker sends: the whole gradient (its slice), or
  // one chunk of it.
  const int64_t largest_push =
      std::min(bounds_[1] * static_cast<int64_t>(sizeof(float)), proto::kDefaultChunkBytes);
  if (config_.max_message_bytes > 0 && config_.max_message_bytes < largest_push) {
    return Status::InvalidArgument("--max-message-bytes " +
                                   std::to_string(config_.max_message_bytes) +
                                   " is less than a worker's push of this model needs (" +
                                   std::to_string(largest_push) + " bytes)");
  }
  max_message_bytes_ = config_.max_message_bytes > 0 ? config_.max_message_bytes
                                                     : model_bytes + kMessageHeadroom;
  bind_options.max_frame_bytes = max_message_bytes_;
  bind_options.max_connections = config_.max_connections > 0
                                     ? config_.max_connections
                                     : config_.workers + kConnectionHeadroom +
                                           config_.shard_count - 1;
  DMLPS_ASSIGN_OR_RETURN(net::Endpoint endpoint,
                         net::Endpoint::Bind(context_, config_.bind, bind_options));
  endpoint_.emplace(std::move(endpoint));
  StartCoordinator();
  spdlog::info("listening on {}, waiting for {} worker{}", endpoint_->address(), config_.workers,
               config_.workers == 1 ? "" : "s");
  if (!config_.endpoint_file.empty()) {
    DMLPS_RETURN_IF_ERROR(WriteEndpointFile(config_.endpoint_file, endpoint_->address()));
  }
  WriteEvaluationHeader(tsv_);
  return Status::Ok();
}

double ParameterServer::Seconds() const {
  if (!started_) return 0;
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

bool ParameterServer::Finished() const {
  return report_.target_reached || driver_->limit_reached() || report_.signal != 0;
}

Status ParameterServer::Resume(std::vector<float>* params) {
  DMLPS_ASSIGN_OR_RETURN(Checkpoint checkpoint, ReadCheckpointFile(config_.resume));
  const std::string& source = config_.resume;
  DMLPS_RETURN_IF_ERROR(CheckResumable(checkpoint, source, Identity(),
                                       static_cast<int64_t>(params->size())));
  DMLPS_RETURN_IF_ERROR(optimizer_->SetState(checkpoint.optimizer_state).WithContext(source));
  *params = *checkpoint.params;
  driver_->Restore(SavedPolicyState(checkpoint), checkpoint.samples);
  seconds_before_ = checkpoint.seconds;
  last_checkpoint_iteration_ = checkpoint.iteration;
  report_.resumed_iteration = checkpoint.iteration;
  spdlog::info("resuming from {}: iteration {}, model version {}, {} samples trained, {:.1f} s",
               source, checkpoint.iteration, checkpoint.version, checkpoint.samples,
               checkpoint.seconds);
  return Status::Ok();
}

CheckpointIdentity ParameterServer::Identity() const {
  return {spec_->Name(), policy_->Name(), optimizer_->Name()};
}

Result<RunReport> ParameterServer::Run() {
  // Evaluation gets one core at most: the cores belong to training.
  Eigen::setNbThreads(1);
  DMLPS_RETURN_IF_ERROR(Setup());
  last_heartbeat_ = Clock::now();
  net::Frames frames;
  while (!Finished()) {
    Result<bool> got = endpoint_->Receive(&frames, kPollSlice);
    if (!got.ok()) return got.status();
    if (*got) HandleFrames(frames);
    CollectEvaluations();
    if (signal_ != nullptr && signal_->load() != 0) report_.signal = signal_->load();
    if (started_ && config_.max_seconds > 0 && Seconds() >= config_.max_seconds &&
        !driver_->limit_reached()) {
      spdlog::info("time limit of {} s reached", config_.max_seconds);
      driver_->EndRun();
    }
    if (Clock::now() - last_heartbeat_ >= config_.heartbeat) {
      SendHeartbeats();
      CheckSilence();
    }
    if (started_) MaybeCheckpoint();
    CloseStalledStreams();
    shards_->SendOrders();
    if (!shards_->fatal().ok()) {
      StopWorkers("a server shard was lost");
      return shards_->fatal();
    }
  }
  report_.seconds = Seconds();
  report_.iterations = driver_->iteration();

  std::string reason = report_.target_reached ? "target accuracy reached"
                       : report_.signal != 0  ? "server interrupted"
                                              : "limit reached";
  if (!report_.target_reached && report_.signal == 0) {
    // The last snapshot may wait for chunks still on their way.
    DrainStreams(kDrainLimit);
    // The other shards' slices of the last snapshots.
    shards_->SendOrders();
    shards_->AwaitSlices(kDrainLimit);
  }
  if (!config_.save_model.empty()) {
    if (Status saved = SaveModel(); !saved.ok()) {
      StopWorkers(reason);
      return saved;
    }
  }
  StopWorkers(reason);
  FinishCheckpoints();
  if (report_.workers_lost > 0 || report_.workers_joined > 0) {
    spdlog::info("membership: {} workers lost (last: {}), {} joined while training",
                 report_.workers_lost, report_.last_lost, report_.workers_joined);
  }
  if (report_.target_reached || report_.signal != 0) {
    evaluator_->DropPending();
  } else {
    // Snapshots taken before the end still count: wait for their results.
    evaluator_->WaitIdle();
    CollectEvaluations();
  }

  // Compute ratio: the share of the run a worker spent computing, its emulated
  // slowness included (it stands for a slower machine's compute).
  std::vector<sync::WorkerTotals> totals;
  for (const std::optional<Member>& m : members_) {
    if (!m.has_value() || m->totals.steps == 0) continue;
    const int64_t rank = &m - members_.data();
    const sync::WorkerTotals& t = m->totals;
    totals.push_back(t);
    spdlog::info("worker {}: {} steps, {} samples, compute {:.1f} s, straggle {:.1f} s, "
                 "wait {:.1f} s, compute ratio {:.2f}, {} refused",
                 rank, t.steps, t.samples, t.compute_s, t.straggle_s, t.wait_s,
                 sync::ComputeRatio(t, report_.seconds), t.refused);
  }
  if (tracer_) {
    tracer_->Instant("run", "end", trace::NowMicros(),
                     {{"seconds", report_.seconds}, {"iterations", report_.iterations}});
    if (Status flushed = tracer_->Flush(); !flushed.ok()) spdlog::warn("{}", flushed.message());
  }
  const sync::RunSummary summary = sync::Summarize(totals, report_.seconds);
  report_.compute_ratio_mean = summary.compute_ratio_mean;
  report_.compute_ratio_min = summary.compute_ratio_min;
  report_.wasted_samples = driver_->wasted_samples();
  report_.samples = driver_->samples_applied();
  report_.wait_share = summary.wait_share;
  spdlog::info("summary: policy {}, {:.2f} s, {} iterations, compute ratio mean {:.3f} min {:.3f}, "
               "wasted samples {}",
               policy_->Name(), report_.seconds, report_.iterations, report_.compute_ratio_mean,
               report_.compute_ratio_min, report_.wasted_samples);
  if (skipped_snapshots_ > 0) {
    spdlog::info("{} snapshots not evaluated: evaluation fell behind", skipped_snapshots_);
  }
  if (driver_->dropped_pushes() > 0) {
    spdlog::info("{} pushes dropped ({} samples wasted)", driver_->dropped_pushes(),
                 report_.wasted_samples);
  }
  if (report_.target_reached) {
    spdlog::info("reached accuracy {:.4f} >= {} after {:.2f} s and {} iterations",
                 report_.last_eval.accuracy, config_.target_accuracy, report_.seconds_to_target,
                 report_.iterations_to_target);
  } else if (config_.target_accuracy > 0) {
    spdlog::warn("target accuracy {} not reached (best seen at the end: {:.4f})",
                 config_.target_accuracy, report_.last_eval.accuracy);
  }
  return report_;
}

void ParameterServer::Refuse(const zmq::message_t& identity, const std::string& who,
                             const std::string& why, bool fatal, bool rejoin) {
  ++refusals_;
  if (refusals_ <= kLoudRefusals) {
    spdlog::warn("refused a message from {}: {}", who, why);
    if (refusals_ == kLoudRefusals) spdlog::warn("further refusals are logged at debug level");
  } else {
    spdlog::debug("refused a message from {}: {}", who, why);
  }
  Status sent = endpoint_->SendMessage(&identity, proto::Error{why, fatal, rejoin});
  if (!sent.ok()) spdlog::debug("could not tell {} why: {}", who, sent.ToString());
}

void ParameterServer::HandleFrames(net::Frames& frames) {
  if (frames.size() < 2) {
    // A ROUTER always gives the identity first, so one frame means an empty message.
    if (!frames.empty()) Refuse(frames[0], "peer " + Hex(frames[0]), "empty message", true);
    return;
  }
  zmq::message_t identity = net::CopyFrame(frames[0]);
  if (const int64_t shard = shards_->ShardOf(identity); shard >= 0) {
    Result<proto::Message> message = proto::DecodeMessage(frames, 1);
    if (!message.ok()) {
      Refuse(identity, "server shard " + std::to_string(shard), message.status().message(), false);
      return;
    }
    shards_->HandleMessage(shard, *message);
    return;
  }
  auto it = rank_of_.find(Key(identity));
  const int64_t rank = it == rank_of_.end() ? -1 : it->second;
  const std::string who = rank >= 0 ? "worker " + std::to_string(rank) : "peer " + Hex(identity);
  // One too large is dropped unread: a worker's step is not counted either.
  std::string why;
  std::optional<proto::Message> message = DecodeBounded(frames, max_message_bytes_, &why);
  if (!message.has_value()) {
    Refuse(identity, who, why, rank < 0);
    return;
  }
  proto::Body& body = message->body;
  if (auto* hello = std::get_if<proto::Hello>(&body)) {
    if (hello->shard >= 0) {
      if (Status registered = shards_->Register(identity, *hello); !registered.ok()) {
        Refuse(identity, ShardName(*hello), registered.message(), true);
      }
    } else if (!shards_->AllRegistered() && rank < 0) {
      // Its Welcome names every shard: it waits until all are here.
      shards_->HoldHello(identity, *hello);
    } else {
      HandleHello(identity, *hello);
    }
    return;
  }
  if (rank < 0 && shards_->Holds(identity)) {
    return;  // a worker waiting for its Welcome keeps itself alive
  }
  if (rank < 0) {
    // A worker of a server that restarted, or one declared lost: it may
    // Hello again.
    Refuse(identity, who,
           std::string(proto::MsgTypeName(proto::TypeOf(body))) + " before Hello", true,
           /*rejoin=*/true);
    return;
  }
  Member& member = *members_[rank];
  member.last_seen = Clock::now();
  if (auto* pull = std::get_if<proto::Pull>(&body)) {
    HandlePull(rank, *pull);
  } else if (auto* push = std::get_if<proto::Push>(&body)) {
    HandlePush(rank, *push, message->payload);
  } else if (auto* chunk = std::get_if<proto::Chunk>(&body)) {
    HandleChunk(rank, *chunk, message->payload);
  } else if (std::holds_alternative<proto::Heartbeat>(body)) {
    // Its arrival is all it says.
  } else if (auto* error = std::get_if<proto::Error>(&body)) {
    if (error->fatal) {
      LoseWorker(rank, "gave up: " + error->message);
    } else {
      spdlog::warn("worker {} reports: {}", rank, error->message);
    }
  } else {
    Refuse(identity, who,
           "a worker may not send " + std::string(proto::MsgTypeName(proto::TypeOf(body))),
           false);
  }
}

void ParameterServer::Admit(const zmq::message_t& identity, const proto::Hello& hello,
                            int64_t rank) {
  Member member;
  member.identity = net::CopyFrame(identity);
  member.host = hello.host;
  member.pid = hello.pid;
  member.last_seen = Clock::now();
  members_[rank] = std::move(member);
  rank_of_[Key(identity)] = rank;
  ++joined_;
  driver_->Attach(rank, sync::WorkerInfo{hello.max_batch});
}

void ParameterServer::HandleHello(const zmq::message_t& identity, const proto::Hello& hello) {
  const std::string who = "peer " + Hex(identity) + " (" + hello.host + ":" +
                          std::to_string(hello.pid) + ")";
  auto it = rank_of_.find(Key(identity));
  int64_t rank = -1;
  if (it != rank_of_.end()) {
    rank = it->second;  // a repeated Hello gets the same answer again
  } else if (started_) {
    // A running job takes anyone: the rank asked for when it is free, else
    // the lowest rank a lost worker left free, else a new one.
    if (hello.max_batch < 0 || hello.rank < -1) {
      Refuse(identity, who, "a negative rank or max_batch", true);
      return;
    }
    const auto ranks = static_cast<int64_t>(members_.size());
    if (hello.rank >= 0 && hello.rank < ranks && !members_[hello.rank].has_value()) {
      rank = hello.rank;
    } else {
      for (int64_t r = 0; r < ranks && rank < 0; ++r) {
        if (!members_[r].has_value()) rank = r;
      }
    }
    if (rank < 0) {
      if (ranks >= kMaxRanks) {
        Refuse(identity, who, "the job has " + std::to_string(ranks) + " ranks, the most it takes",
               true);
        return;
      }
      rank = driver_->AddRank();
      members_.resize(static_cast<size_t>(rank) + 1);
    }
    Admit(identity, hello, rank);
    spdlog::info("worker {} joins the running job from {}:{}; it trains once its data is loaded",
                 rank, hello.host, hello.pid);
  } else {
    if (joined_ >= config_.workers) {
      Refuse(identity, who,
             "the cluster is full (" + std::to_string(config_.workers) + " workers)", true);
      return;
    }
    if (hello.rank >= config_.workers || hello.rank < -1) {
      Refuse(identity, who,
             "rank " + std::to_string(hello.rank) + " is outside 0.." +
                 std::to_string(config_.workers - 1),
             true);
      return;
    }
    if (hello.rank >= 0) {
      if (members_[hello.rank].has_value()) {
        Refuse(identity, who, "rank " + std::to_string(hello.rank) + " is taken", true);
        return;
      }
      rank = hello.rank;
    } else {
      // The lowest free rank.
      for (int64_t r = 0; r < config_.workers; ++r) {
        if (!members_[r].has_value()) {
          rank = r;
          break;
        }
      }
    }
    if (hello.max_batch < 0) {
      Refuse(identity, who, "a negative max_batch", true);
      return;
    }
    Admit(identity, hello, rank);
    spdlog::info("worker {} joined from {}:{} ({}/{})", rank, hello.host, hello.pid, joined_,
                 config_.workers);
  }
  proto::Welcome welcome;
  welcome.rank = rank;
  welcome.num_workers = config_.workers;
  welcome.model = spec_->Name();
  welcome.policy = policy_->Name();
  welcome.batch = config_.batch;
  welcome.input_dim = spec_->input_dim;
  welcome.classes = spec_->classes;
  welcome.num_params = store_->size();
  // A rank beyond --workers (a worker that joined a running job) shares a
  // shard with a lower rank.
  welcome.shard_index = rank % config_.workers;
  welcome.shard_count = config_.workers;
  welcome.seed = config_.seed;
  welcome.mode = std::string(sync::WorkerModeName(policy_->mode()));
  welcome.chunk = config_.policy.chunk;
  welcome.token_size = config_.policy.token_size;
  welcome.lr = config_.lr;
  welcome.momentum = config_.momentum;
  welcome.num_params = bounds_.back();
  shards_->DescribeShards(&welcome);
  Status sent = endpoint_->SendMessage(&identity, welcome);
  if (!sent.ok()) spdlog::warn("cannot welcome worker {}: {}", rank, sent.ToString());
  if (!started_ && joined_ == config_.workers) {
    spdlog::info("all {} workers joined; training starts when each has loaded its data",
                 config_.workers);
  }
}

void ParameterServer::Start() {
  started_ = true;
  start_ = Clock::now();
  start_us_ = trace::NowMicros();
  if (tracer_) {
    tracer_->Instant("run", "start", start_us_,
                     {{"policy", policy_->Name()},
                      {"workers", config_.workers},
                      {"target", config_.target_accuracy}});
  }
  spdlog::info("all {} workers ready; training {}", config_.workers,
               report_.resumed_iteration >= 0
                   ? "goes on from iteration " + std::to_string(report_.resumed_iteration)
                   : std::string("starts"));
  last_checkpoint_at_ = Clock::now();
  // Pulls that arrived while the cluster was assembling are answered now;
  // the untrained (or resumed) model is evaluated: accuracy at time zero.
  driver_->Start();
}

void ParameterServer::HandlePull(int64_t rank, const proto::Pull& pull) {
  Member& member = *members_[rank];
  if (driver_->pull_pending(rank)) {
    Refuse(member.identity, "worker " + std::to_string(rank), "a pull is already pending",
           false);
    return;
  }
  if (started_ && !driver_->active(rank)) {
    // A worker joining the running job, ready now: the policy counts it from
    // here, its first pull gets the current model.
    member.ready = true;
    ++report_.workers_joined;
    spdlog::info("worker {} ({}:{}) trains from iteration {}; {} live workers", rank, member.host,
                 member.pid, driver_->iteration(), driver_->live_workers() + 1);
    if (tracer_) tracer_->Instant("run", "worker joined", trace::NowMicros(), {{"worker", rank}});
    driver_->Join(rank, pull.clock);
  }
  if (started_ && pull.clock != driver_->worker_clock(rank)) {
    Refuse(member.identity, "worker " + std::to_string(rank),
           "pull for clock " + std::to_string(pull.clock) + ", but the worker has pushed " +
               std::to_string(driver_->worker_clock(rank)) + " times",
           false);
    return;
  }
  member.ready = true;
  driver_->Pull(rank);
  if (!started_) {
    // A worker pulls once its data is loaded: the run's clock starts when all
    // are ready, so loading data is not counted as training time.
    bool all_ready = joined_ == config_.workers;
    for (int64_t r = 0; r < config_.workers && all_ready; ++r) {
      all_ready = members_[r].has_value() && driver_->pull_pending(r);
    }
    if (all_ready) Start();
  }
}

void ParameterServer::HandlePush(int64_t rank, const proto::Push& push, net::Frames& payload) {
  Member& member = *members_[rank];
  const std::string who = "worker " + std::to_string(rank);
  if (!started_) {
    Refuse(member.identity, who, "push before training started", false);
    return;
  }
  if (push.samples < 0 || push.batch < 0 || push.compute_us < 0 || push.wait_us < 0 ||
      push.straggle_us < 0) {
    Refuse(member.identity, who, "push with a negative count or time", false);
    return;
  }
  // A payload that cannot be used still ends the worker's step, so that one
  // bad push cannot stall the others; it just contributes nothing.
  sync::PushInfo info;
  info.clock = push.clock;  // the driver counts from where the worker joined
  info.base_version = push.base_version;
  info.samples = push.samples;
  info.batch = push.batch;
  info.busy_s = (push.compute_us + push.straggle_us) * 1e-6;
  info.comm_s = push.comm_us > 0 ? push.comm_us * 1e-6 : 0;
  // (A streamed push is timed to its header: its chunks are still coming.)
  if (member.replied_at != Clock::time_point{}) {
    info.cycle_s = std::chrono::duration<double>(Clock::now() - member.replied_at).count();
  }
  info.cpu = std::isfinite(push.cpu) ? push.cpu : 0;
  info.memory = static_cast<double>(push.memory_bytes);
  if (member.incoming != nullptr) {
    AbandonIncoming(member, "push " + std::to_string(member.incoming_clock) +
                                " broken off by the next push; its missing chunks are left out");
  }
  // A streamed gradient is checked chunk by chunk as it arrives (HandleChunk);
  // one that came whole is checked now.
  std::shared_ptr<proto::IncomingTensor> gradient;
  std::string problem;
  Result<proto::IncomingTensor> opened = proto::IncomingTensor::Open(
      push.num_params, push.chunks, push.chunk_floats, std::move(payload));
  const bool streamed = opened.ok() && opened->streamed();
  if (push.num_params != store_->size()) {
    problem = "push carries " + std::to_string(push.num_params) +
              " parameters, the model has " + std::to_string(store_->size());
  } else if (!opened.ok()) {
    problem = opened.status().message();
  } else if (!opened->streamed() && !opened->AllFinite(0, opened->size())) {
    problem = "gradient contains NaN or infinite values";
  } else {
    gradient = std::make_shared<proto::IncomingTensor>(std::move(opened).value());
  }
  if (streamed && gradient != nullptr) {
    // Its chunks follow. (A streamed push refused here has the wrong size:
    // its chunks are refused one by one rather than held.)
    member.incoming = gradient;
    member.incoming_clock = push.clock;
    member.incoming_at = Clock::now();
  }
  if (!problem.empty()) {
    info.usable = false;
    ++member.totals.refused;
    Refuse(member.identity, who, problem + "; step counted, gradient ignored", false);
  }

  if (tracer_) {
    tracer_->Instant("comm", "push", trace::NowMicros(),
                     {{"worker", rank},
                      {"clock", push.clock},
                      {"samples", push.samples},
                      {"staleness", policy_->version() - push.base_version}});
  }
  const sync::PushOutcome outcome = driver_->Push(rank, info, gradient);
  // The worker spent the time whether or not its push is used.
  sync::WorkerTotals& totals = member.totals;
  ++totals.steps;
  totals.compute_s += push.compute_us * 1e-6;
  totals.straggle_s += push.straggle_us * 1e-6;
  totals.wait_s += push.wait_us * 1e-6;
  totals.samples += outcome.samples;
  // The other shards free their slice of a push this one does not stage.
  if (!outcome.staged) Order({proto::Order::kDiscard, rank, push.clock, 0});
  driver_->Advance();
}

void ParameterServer::HandleChunk(int64_t rank, const proto::Chunk& chunk, net::Frames& payload) {
  Member& member = *members_[rank];
  const std::string who = "worker " + std::to_string(rank);
  if (member.incoming == nullptr) {
    Refuse(member.identity, who,
           "chunk " + std::to_string(chunk.index) + " without a streamed push to belong to", false);
    return;
  }
  Result<bool> finite = TakeChunk(*member.incoming, chunk.index, payload);
  if (!finite.ok()) {
    ++member.totals.refused;
    AbandonIncoming(member, "push " + std::to_string(member.incoming_clock) + ": " +
                                finite.status().message() +
                                "; the rest of its gradient is left out");
    return;
  }
  if (!*finite) {
    ++member.totals.refused;
    Refuse(member.identity, who,
           "push " + std::to_string(member.incoming_clock) + ", chunk " +
               std::to_string(chunk.index) + " contains NaN or infinite values; that chunk is "
               "left out",
           false);
  }
  member.incoming_at = Clock::now();
  if (member.incoming->complete()) member.incoming.reset();
  store_->Advance();
}

void ParameterServer::CloseStalledStreams() {
  const Clock::time_point now = Clock::now();
  for (std::optional<Member>& m : members_) {
    if (m.has_value() && m->incoming != nullptr && now - m->incoming_at >= kStreamStall) {
      AbandonIncoming(*m, "push " + std::to_string(m->incoming_clock) + ": no chunk for " +
                              std::to_string(kStreamStall.count() / 1000) +
                              " s; the rest of its gradient is left out");
    }
  }
}

void ParameterServer::AbandonIncoming(Member& member, const std::string& why) {
  const auto it = rank_of_.find(Key(member.identity));
  Refuse(member.identity, "worker " + std::to_string(it == rank_of_.end() ? -1 : it->second), why,
         false);
  member.incoming->Close();
  member.incoming.reset();
  store_->Advance();
}

void ParameterServer::DrainStreams(milliseconds limit) {
  const Clock::time_point deadline = Clock::now() + limit;
  auto streaming = [&] {
    return std::any_of(members_.begin(), members_.end(), [](const std::optional<Member>& m) {
      return m.has_value() && m->incoming != nullptr;
    });
  };
  net::Frames frames;
  while (store_->pending() > 0 && streaming() && Clock::now() < deadline) {
    Result<bool> got = endpoint_->Receive(&frames, kPollSlice);
    if (!got.ok()) return;
    if (!*got || frames.size() < 2) continue;
    // Only the chunks matter now.
    auto it = rank_of_.find(Key(frames[0]));
    if (it == rank_of_.end()) continue;
    Result<proto::Message> message = proto::DecodeMessage(frames, 1);
    if (!message.ok()) continue;
    if (auto* chunk = std::get_if<proto::Chunk>(&message->body)) {
      HandleChunk(it->second, *chunk, message->payload);
    }
  }
}

void ParameterServer::Stage(const sync::HandledPush<Gradient>& push, double weight) {
  if (push.payload == nullptr) return;  // the policy only stages usable pushes
  if (config_.deterministic) {
    // Summed at the next apply, in rank order.
    held_stages_.push_back({push.worker, push.clock, weight, push.payload});
    return;
  }
  // Summed chunk by chunk as a streamed gradient arrives.
  store_->Stage(push.payload, static_cast<float>(weight));
  Order({proto::Order::kStage, push.worker, push.clock, weight});
}

void ParameterServer::Apply(double scale, bool with_optimizer) {
  // --deterministic: the same sum whatever order the pushes came in.
  std::stable_sort(held_stages_.begin(), held_stages_.end(),
                   [](const HeldStage& a, const HeldStage& b) { return a.worker < b.worker; });
  for (HeldStage& held : held_stages_) {
    store_->Stage(std::move(held.gradient), static_cast<float>(held.weight));
    Order({proto::Order::kStage, held.worker, held.clock, held.weight});
  }
  held_stages_.clear();
  std::function<void()> traced;
  if (tracer_) {
    // The policy counted this apply already: its version is the new one. The
    // span ends when the last chunk is applied (streamed: once it arrived).
    const int64_t start_us = trace::NowMicros();
    const int64_t version = policy_->version();
    traced = [this, start_us, version] {
      tracer_->Span("apply", "apply", start_us, trace::NowMicros() - start_us,
                    {{"version", version}});
    };
  }
  store_->Apply(with_optimizer ? optimizer_.get() : nullptr, static_cast<float>(scale),
                std::move(traced));
  Order({with_optimizer ? proto::Order::kApply : proto::Order::kApplyDelta, -1, 0, scale});
}

void ParameterServer::SendModel(int64_t rank, const sync::Reply& reply) {
  Member& member = *members_[rank];
  member.replied_at = Clock::now();
  // One copy per model version, shared by every reply and evaluation of it;
  // a large model streams out chunk by chunk as its updates are applied.
  proto::Model header{reply.version, store_->size(), reply.batch, reply.token};
  QueueModelReply(*store_, *endpoint_, &member.identity, header, "worker " + std::to_string(rank));
  Order({proto::Order::kReply, rank, 0, static_cast<double>(header.version)});
}

void ParameterServer::SendContinue(int64_t rank, bool download, const sync::Reply& reply) {
  Member& member = *members_[rank];
  Status sent =
      endpoint_->SendMessage(&member.identity, proto::Continue{download, reply.token, reply.batch});
  if (!sent.ok()) spdlog::warn("cannot answer worker {}: {}", rank, sent.ToString());
}

void ParameterServer::SendSyncNow(int64_t rank, int64_t round) {
  Status sent = endpoint_->SendMessage(&members_[rank]->identity, proto::SyncNow{round});
  if (!sent.ok()) spdlog::warn("cannot sync worker {}: {}", rank, sent.ToString());
}

void ParameterServer::Dropped(int64_t rank, const sync::Drop& drop) {
  if (drop.late) {
    // Work the policy expects to throw away (a late push): no one's fault.
    spdlog::debug("worker {}: push dropped: {}", rank, drop.reason);
  } else {
    Refuse(members_[rank]->identity, "worker " + std::to_string(rank),
           "push dropped: " + drop.reason, false);
  }
}

void ParameterServer::LimitReached() {
  spdlog::info("iteration limit of {} reached", config_.max_iterations);
}

void ParameterServer::SubmitSnapshot(bool must) {
  // The model of this version exists once its last chunk is applied: it is
  // stamped then (at once, unless a streamed push is still arriving).
  const int64_t iteration = driver_->iteration();
  const int64_t version = policy_->version();
  const int64_t samples = driver_->samples_applied();
  if (sharded()) {
    // The other shards' slices complete it.
    const int64_t id = shards_->BeginSnapshot({0, iteration, version, samples, nullptr}, must);
    store_->Snapshot([this, id](std::shared_ptr<const std::vector<float>> values) {
      shards_->AddOwnSlice(id, Seconds(), *values);
    });
    return;
  }
  store_->Snapshot([this, must, iteration, version,
                    samples](std::shared_ptr<const std::vector<float>> values) {
    Evaluate({Seconds(), iteration, version, samples, std::move(values)}, must);
  });
}

void ParameterServer::Evaluate(Snapshot snapshot, bool must) {
  if (!evaluator_->Submit(std::move(snapshot), must)) {
    if (skipped_snapshots_++ == 0) {
      spdlog::warn("evaluation is falling behind training; skipping snapshots until it catches up");
    }
  }
}

void ParameterServer::StartCoordinator() {
  proto::Welcome shard_welcome;
  shard_welcome.model = spec_->Name();
  shard_welcome.policy = policy_->Name();
  shard_welcome.input_dim = spec_->input_dim;
  shard_welcome.classes = spec_->classes;
  shard_welcome.seed = config_.seed;
  shard_welcome.lr = config_.lr;
  shard_welcome.momentum = config_.momentum;
  shards_ = std::make_unique<ShardCoordinator>(
      *endpoint_, bounds_, std::move(shard_welcome),
      [this](Snapshot snapshot, bool must) { Evaluate(std::move(snapshot), must); },
      [this](const zmq::message_t& identity, const proto::Hello& hello) {
        HandleHello(identity, hello);
      });
}

Status ParameterServer::SaveModel() {
  if (store_->ApplyPending()) {
    return Status::Unavailable("--save-model: an update is still waiting for its gradient's "
                               "chunks; the model was not saved");
  }
  const std::vector<float> params = store_->Params();
  return WriteRawModel(config_.save_model, params);
}

void ParameterServer::CollectEvaluations() {
  RecordEvaluations(evaluator_->TakeResults(), config_.target_accuracy, start_us_, tsv_,
                    tracer_.get(), &report_);
}

void ParameterServer::SendHeartbeats() {
  last_heartbeat_ = Clock::now();
  const int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  for (std::optional<Member>& m : members_) {
    if (!m.has_value()) continue;
    Status sent = endpoint_->SendMessage(&m->identity, proto::Heartbeat{now_us});
    if (!sent.ok()) spdlog::debug("heartbeat to {}:{} failed: {}", m->host, m->pid, sent.ToString());
  }
  shards_->SendHeartbeats(now_us);
}

void ParameterServer::LoseWorker(int64_t rank, const std::string& why) {
  Member& member = *members_[rank];
  ++report_.workers_lost;
  report_.last_lost = "worker " + std::to_string(rank) + " (" + member.host + ":" +
                      std::to_string(member.pid) + "): " + why;
  if (member.incoming != nullptr) {
    // Its missing chunks will never come: let the others' replies go on.
    member.incoming->Close();
    member.incoming.reset();
    store_->Advance();
  }
  rank_of_.erase(Key(member.identity));
  members_[rank].reset();
  --joined_;
  Order({proto::Order::kForget, rank, 0, 0});
  const int64_t live = driver_->live_workers() - (driver_->active(rank) ? 1 : 0);
  spdlog::warn("lost {}; going on with {} live worker{}", report_.last_lost, live,
               live == 1 ? "" : "s");
  if (tracer_) {
    tracer_->Instant("run", "worker lost", trace::NowMicros(), {{"worker", rank}, {"why", why}});
  }
  // The policy stops waiting for it; a round it held up may close.
  driver_->Lose(rank);
}

void ParameterServer::CheckSilence() {
  const Clock::time_point now = Clock::now();
  shards_->CheckSilence(now, config_.worker_timeout);
  for (int64_t r = 0; r < static_cast<int64_t>(members_.size()); ++r) {
    const std::optional<Member>& m = members_[r];
    if (!m.has_value()) continue;
    const milliseconds limit = m->ready ? config_.worker_timeout
                                        : std::max(config_.worker_timeout, kLoadAllowance);
    if (now - m->last_seen >= limit) {
      LoseWorker(r, fmt::format("silent for {:g} s", std::chrono::duration<double>(limit).count()));
    }
  }
}

void ParameterServer::HoldChanged(bool holding, int64_t live) {
  if (holding) {
    spdlog::warn("training holds: {} live worker{}, fewer than --min-workers {}; waiting for "
                 "workers to join",
                 live, live == 1 ? "" : "s", config_.min_workers);
    if (tracer_) tracer_->Instant("run", "hold", trace::NowMicros(), {{"live", live}});
    return;
  }
  spdlog::info("training goes on with {} live workers", live);
  if (tracer_) tracer_->Instant("run", "resume", trace::NowMicros(), {{"live", live}});
}

void ParameterServer::MaybeCheckpoint() {
  const int64_t iteration = driver_->iteration();
  if (checkpoints_ == nullptr || iteration == last_checkpoint_iteration_) return;
  const Clock::time_point now = Clock::now();
  const bool by_count = config_.checkpoint_every_iterations > 0 &&
                        iteration >= std::max<int64_t>(last_checkpoint_iteration_, 0) +
                                           config_.checkpoint_every_iterations;
  const bool by_time =
      config_.checkpoint_every_seconds > 0 &&
      std::chrono::duration<double>(now - last_checkpoint_at_).count() >=
          config_.checkpoint_every_seconds;
  if (!by_count && !by_time) return;
  // With every update the policy emitted applied on every lane, the model,
  // the optimizer's state and the policy's version agree; what is staged
  // for a round in progress is not kept (workers redo that round). A large
  // model's update runs as its pushes stream in: until then, wait.
  if (store_->ApplyPending()) return;
  const Clock::time_point start = Clock::now();
  Checkpoint checkpoint = MakeCheckpoint(Identity(), config_.workers, policy_->Save(),
                                         driver_->samples_applied(), seconds_before_ + Seconds(),
                                         optimizer_->State());
  last_checkpoint_iteration_ = iteration;
  last_checkpoint_at_ = now;
  // As evaluation does: a copy of the model taken once its updates are in
  // (at once here, nothing being pending); encoding and writing are the
  // writer thread's.
  store_->Snapshot([this, checkpoint = std::move(checkpoint)](
                       std::shared_ptr<const std::vector<float>> values) mutable {
    checkpoint.params = std::move(values);
    checkpoints_->Submit(std::move(checkpoint));
  });
  checkpoint_path_ms_ += std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void ParameterServer::FinishCheckpoints() {
  if (checkpoints_ == nullptr) return;
  checkpoints_->Finish();
  report_.checkpoints = checkpoints_->written();
  if (report_.checkpoints > 0) {
    spdlog::info("{} checkpoints: {:.2f} ms each on the training path, {:.1f} ms each writing "
                 "(off it)",
                 report_.checkpoints, checkpoint_path_ms_ / static_cast<double>(report_.checkpoints),
                 checkpoints_->write_ms() / static_cast<double>(report_.checkpoints));
  }
}

void ParameterServer::StopWorkers(const std::string& reason) {
  for (std::optional<Member>& m : members_) {
    if (!m.has_value()) continue;
    Status sent = endpoint_->SendMessage(&m->identity, proto::Stop{reason});
    if (!sent.ok()) spdlog::debug("cannot stop {}:{}: {}", m->host, m->pid, sent.ToString());
  }
  // The other shards stop after the orders before: they save what those left.
  shards_->Stop(reason);
}

}  // namespace

Result<RunReport> RunServer(const ServerConfig& config, std::ostream& tsv,
                            const std::atomic<int>* signal) {
  if (config.shard_index > 0) return RunServerShard(config, signal);
  ParameterServer server(config, tsv, signal);
  return server.Run();
}

}  // namespace dmlps::server
