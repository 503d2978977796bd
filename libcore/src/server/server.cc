#include "dmlps/server/server.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <thread>

#include "dmlps/data/dataset.h"
#include "dmlps/net/curve.h"
#include "dmlps/net/endpoint.h"
#include "dmlps/optim/optimizer.h"
#include "dmlps/proto/codec.h"
#include "dmlps/server/checkpoint.h"
#include "dmlps/trace/trace.h"
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

struct Member {
  zmq::message_t identity;
  std::string host;
  int64_t pid = 0;
  sync::WorkerInfo info;
  bool ready = false;         // it pulled once: its data is loaded
  bool active = false;        // the policy counts it (joined)
  Clock::time_point last_seen;  // when it was last heard from
  // The policy's clock minus the worker's: a worker that joins a running job
  // counts its steps from 0, the policy from where the run stands.
  int64_t clock_offset = 0;
  bool pull_pending = false;  // a pull arrived and has no reply yet
  // The payload of the worker's last push while its chunks are still coming.
  std::shared_ptr<proto::IncomingTensor> incoming;
  int64_t incoming_clock = 0;
  Clock::time_point incoming_at;  // when its last chunk (or header) arrived
  Clock::time_point replied_at;  // when the last model reply was queued; epoch: none yet
  int64_t next_batch = 0;   // batch size to send with the next reply; 0: unchanged
  int64_t next_token = -1;  // token to send with the next reply; -1: none
  // Totals the worker reported, for the closing summary.
  int64_t steps = 0;
  int64_t samples = 0;
  int64_t refused = 0;
  double compute_s = 0;
  double straggle_s = 0;
  double wait_s = 0;
};

// Writes checkpoints on a thread of its own, so that training never waits
// for the disk; a newer checkpoint replaces one not yet begun.
class CheckpointWriter {
 public:
  explicit CheckpointWriter(std::string path) : path_(std::move(path)) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~CheckpointWriter() { Finish(); }

  void Submit(Checkpoint checkpoint) {
    std::lock_guard lock(mutex_);
    pending_ = std::move(checkpoint);
    wake_.notify_one();
  }
  // Writes what is pending and stops the thread.
  void Finish() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
      wake_.notify_one();
    }
    if (thread_.joinable()) thread_.join();
  }
  int64_t written() const {
    std::lock_guard lock(mutex_);
    return written_;
  }
  double write_ms() const {
    std::lock_guard lock(mutex_);
    return write_ms_;
  }

 private:
  void Loop() {
    std::unique_lock lock(mutex_);
    while (true) {
      wake_.wait(lock, [this] { return pending_.has_value() || done_; });
      if (!pending_.has_value()) return;
      Checkpoint checkpoint = std::move(*pending_);
      pending_.reset();
      lock.unlock();
      const Clock::time_point start = Clock::now();
      Status written = WriteCheckpointFile(path_, checkpoint);
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      lock.lock();
      if (written.ok()) {
        ++written_;
        write_ms_ += ms;
        spdlog::info("checkpoint of iteration {} written to {} ({:.1f} ms)", checkpoint.iteration,
                     path_, ms);
      } else {
        spdlog::error("checkpoint of iteration {} not written, the previous one is kept: {}",
                      checkpoint.iteration, written.message());
      }
    }
  }

  const std::string path_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::optional<Checkpoint> pending_;
  bool done_ = false;
  int64_t written_ = 0;
  double write_ms_ = 0;  // summed over the files written
  std::thread thread_;
};

class ParameterServer {
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
  void CarryOut(const sync::Actions& actions,
                const std::shared_ptr<proto::IncomingTensor>& gradient);
  void ReplyModel(int64_t rank);
  void AfterPush();
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
  int64_t ActiveWorkers() const;
  // Holds training while fewer than --min-workers are live; answers what
  // was held once enough are back.
  void UpdateHold();
  // Loads --resume into the model, the optimizer and the policy.
  Status Resume(std::vector<float>* params);
  // Hands a checkpoint to the writer when one is due and every update
  // queued has been applied.
  void MaybeCheckpoint();
  void StopWorkers(const std::string& reason);
  double Seconds() const;
  bool Finished() const;

  // Sharded servers, on shard 0: the other shards register, get their
  // orders (the policy's decisions, translated) and send back their slices
  // of snapshots.
  bool sharded() const { return config_.shard_count > 1; }
  void HandleShardHello(const zmq::message_t& identity, const proto::Hello& hello);
  void HandleShardMessage(int64_t shard, proto::Message& message);
  void Order(proto::Order order) {
    if (sharded()) orders_.push_back(order);
  }
  // Sends the orders gathered since the last call to every other shard.
  void SendOrders();
  // Snapshot `id` gets shard `shard`'s slice of `count` floats, which
  // `copy` writes into the span it is given; evaluated once every slice is in.
  void FillSnapshot(int64_t id, int64_t shard, int64_t count,
                    const std::function<void(std::span<float>)>& copy);
  // Waits, for at most `limit`, for the other shards' slices of the
  // snapshots taken.
  void AwaitSlices(milliseconds limit);
  // Writes --save-model: the parameters this shard holds.
  Status SaveModel();

  const ServerConfig& config_;
  std::ostream& tsv_;
  const std::atomic<int>* signal_;

  zmq::context_t context_;
  std::optional<net::Endpoint> endpoint_;
  std::unique_ptr<sync::Policy> policy_;
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

  int64_t iterations_ = 0;
  int64_t next_eval_ = 0;
  int64_t dropped_pushes_ = 0;
  int64_t wasted_samples_ = 0;
  int64_t samples_applied_ = 0;  // usable samples of accepted pushes
  int64_t refusals_ = 0;
  int64_t max_message_bytes_ = 0;
  int64_t skipped_snapshots_ = 0;
  bool limit_reached_ = false;
  RunReport report_;

  bool holding_ = false;       // fewer than --min-workers live: replies wait
  sync::Actions deferred_;     // the replies held meanwhile, in order
  std::unique_ptr<CheckpointWriter> checkpoints_;  // null without --checkpoint
  int64_t last_checkpoint_iteration_ = -1;
  Clock::time_point last_checkpoint_at_;
  double checkpoint_path_ms_ = 0;  // time the training thread spent on checkpoints
  double seconds_before_ = 0;      // training time before --resume

  // Sharded servers (see sharded()).
  struct Peer {
    zmq::message_t identity;
    std::string address;
    std::string host;
    int64_t pid = 0;
    Clock::time_point last_seen;
  };
  std::vector<int64_t> bounds_;              // where the slices begin, plus the end
  std::vector<std::optional<Peer>> peers_;   // by shard index; [0] is this one
  std::map<std::string, int64_t> shard_of_;  // identity bytes -> shard index
  int64_t peers_joined_ = 0;
  // Workers that said Hello before every shard had registered: answered then.
  std::vector<std::pair<zmq::message_t, proto::Hello>> waiting_hellos_;
  std::vector<proto::Order> orders_;  // not sent yet
  // --deterministic: the stages since the last apply, summed at the next.
  struct HeldStage {
    int64_t worker = 0;
    int64_t clock = 0;  // the worker's own
    double weight = 0;
    std::shared_ptr<proto::IncomingTensor> gradient;
  };
  std::vector<HeldStage> held_stages_;
  // The push being carried out: its worker-side clock, and whether it was staged.
  int64_t handling_clock_ = -1;
  bool handling_staged_ = false;
  struct Assembly {
    Snapshot snapshot;
    std::shared_ptr<std::vector<float>> values;
    int64_t missing = 0;  // slices yet to come, this shard's included
    bool must = false;
  };
  std::map<int64_t, Assembly> assemblies_;  // snapshots waiting for slices, by id
  int64_t next_snapshot_id_ = 0;
  Status fatal_;  // a shard was lost: the run ends with this
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
  peers_.resize(static_cast<size_t>(config_.shard_count));
  DMLPS_ASSIGN_OR_RETURN(optimizer_, optim::MakeOptimizer(config_.lr, config_.momentum,
                                                         static_cast<int64_t>(params.size())));
  sync::PolicyConfig policy_config = config_.policy;
  policy_config.num_workers = config_.workers;
  policy_config.batch = config_.batch;
  DMLPS_ASSIGN_OR_RETURN(policy_, sync::MakePolicy(policy_config));
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
  spdlog::info("listening on {}, waiting for {} worker{}", endpoint_->address(), config_.workers,
               config_.workers == 1 ? "" : "s");
  if (!config_.endpoint_file.empty()) {
    DMLPS_RETURN_IF_ERROR(WriteEndpointFile(config_.endpoint_file, endpoint_->address()));
  }
  tsv_ << "seconds\titeration\taccuracy\tloss\n" << std::flush;
  return Status::Ok();
}

double ParameterServer::Seconds() const {
  if (!started_) return 0;
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

bool ParameterServer::Finished() const {
  return report_.target_reached || limit_reached_ || report_.signal != 0;
}

Status ParameterServer::Resume(std::vector<float>* params) {
  DMLPS_ASSIGN_OR_RETURN(Checkpoint checkpoint, ReadCheckpointFile(config_.resume));
  const std::string& source = config_.resume;
  if (checkpoint.model != spec_->Name() ||
      static_cast<int64_t>(checkpoint.params->size()) != static_cast<int64_t>(params->size())) {
    return Status::Config(source + ": a checkpoint of model " + checkpoint.model + " (" +
                          std::to_string(checkpoint.params->size()) + " parameters), this run's is " +
                          spec_->Name() + " (" + std::to_string(params->size()) + ")");
  }
  if (checkpoint.policy != policy_->Name()) {
    return Status::Config(source + ": a checkpoint of policy " + checkpoint.policy +
                          ", this run's is " + policy_->Name());
  }
  if (checkpoint.optimizer != optimizer_->Name()) {
    return Status::Config(source + ": a checkpoint of optimizer " + checkpoint.optimizer +
                          ", this run's is " + optimizer_->Name() + " (see --momentum)");
  }
  DMLPS_RETURN_IF_ERROR(optimizer_->SetState(checkpoint.optimizer_state).WithContext(source));
  *params = *checkpoint.params;
  policy_->Restore({checkpoint.version, checkpoint.iteration, checkpoint.policy_extra});
  iterations_ = checkpoint.iteration;
  samples_applied_ = checkpoint.samples;
  seconds_before_ = checkpoint.seconds;
  last_checkpoint_iteration_ = checkpoint.iteration;
  report_.resumed_iteration = checkpoint.iteration;
  spdlog::info("resuming from {}: iteration {}, model version {}, {} samples trained, {:.1f} s",
               source, checkpoint.iteration, checkpoint.version, checkpoint.samples,
               checkpoint.seconds);
  return Status::Ok();
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
        !limit_reached_) {
      spdlog::info("time limit of {} s reached", config_.max_seconds);
      limit_reached_ = true;
      SubmitSnapshot(true);
    }
    if (Clock::now() - last_heartbeat_ >= config_.heartbeat) {
      SendHeartbeats();
      CheckSilence();
    }
    if (started_) MaybeCheckpoint();
    CloseStalledStreams();
    SendOrders();
    if (!fatal_.ok()) {
      StopWorkers("a server shard was lost");
      return fatal_;
    }
  }
  report_.seconds = Seconds();
  report_.iterations = iterations_;

  std::string reason = report_.target_reached ? "target accuracy reached"
                       : report_.signal != 0  ? "server interrupted"
                                              : "limit reached";
  if (!report_.target_reached && report_.signal == 0) {
    // The last snapshot may wait for chunks still on their way.
    DrainStreams(kDrainLimit);
    // The other shards' slices of the last snapshots.
    SendOrders();
    AwaitSlices(kDrainLimit);
  }
  if (!config_.save_model.empty()) {
    if (Status saved = SaveModel(); !saved.ok()) {
      StopWorkers(reason);
      return saved;
    }
  }
  StopWorkers(reason);
  if (checkpoints_ != nullptr) {
    checkpoints_->Finish();
    report_.checkpoints = checkpoints_->written();
    if (report_.checkpoints > 0) {
      spdlog::info("{} checkpoints: {:.2f} ms each on the training path, {:.1f} ms each writing "
                   "(off it)",
                   report_.checkpoints, checkpoint_path_ms_ / static_cast<double>(report_.checkpoints),
                   checkpoints_->write_ms() / static_cast<double>(report_.checkpoints));
    }
  }
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
  double ratio_sum = 0;
  double wait_sum = 0;
  double ratio_min = 1;
  int64_t counted = 0;
  for (const std::optional<Member>& m : members_) {
    if (!m.has_value() || m->steps == 0) continue;
    const int64_t rank = &m - members_.data();
    const double busy = m->compute_s + m->straggle_s;
    const double ratio = report_.seconds > 0 ? std::min(1.0, busy / report_.seconds) : 0;
    ratio_sum += ratio;
    wait_sum += report_.seconds > 0 ? std::min(1.0, m->wait_s / report_.seconds) : 0;
    ratio_min = std::min(ratio_min, ratio);
    ++counted;
    spdlog::info("worker {}: {} steps, {} samples, compute {:.1f} s, straggle {:.1f} s, "
                 "wait {:.1f} s, compute ratio {:.2f}, {} refused",
                 rank, m->steps, m->samples, m->compute_s, m->straggle_s, m->wait_s, ratio,
                 m->refused);
  }
  if (tracer_) {
    tracer_->Instant("run", "end", trace::NowMicros(),
                     {{"seconds", report_.seconds}, {"iterations", iterations_}});
    if (Status flushed = tracer_->Flush(); !flushed.ok()) spdlog::warn("{}", flushed.message());
  }
  report_.compute_ratio_mean = counted > 0 ? ratio_sum / counted : 0;
  report_.compute_ratio_min = counted > 0 ? ratio_min : 0;
  report_.wasted_samples = wasted_samples_;
  report_.samples = samples_applied_;
  report_.wait_share = counted > 0 ? wait_sum / counted : 0;
  spdlog::info("summary: policy {}, {:.2f} s, {} iterations, compute ratio mean {:.3f} min {:.3f}, "
               "wasted samples {}",
               policy_->Name(), report_.seconds, iterations_, report_.compute_ratio_mean,
               report_.compute_ratio_min, wasted_samples_);
  if (skipped_snapshots_ > 0) {
    spdlog::info("{} snapshots not evaluated: evaluation fell behind", skipped_snapshots_);
  }
  if (dropped_pushes_ > 0) {
    spdlog::info("{} pushes dropped ({} samples wasted)", dropped_pushes_, wasted_samples_);
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
  if (auto shard = shard_of_.find(Key(identity)); shard != shard_of_.end()) {
    Result<proto::Message> message = proto::DecodeMessage(frames, 1);
    if (!message.ok()) {
      Refuse(identity, "server shard " + std::to_string(shard->second), message.status().message(),
             false);
      return;
    }
    HandleShardMessage(shard->second, *message);
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
      HandleShardHello(identity, *hello);
    } else if (sharded() && peers_joined_ < config_.shard_count - 1 && rank < 0) {
      // Its Welcome names every shard: it waits until all are here.
      waiting_hellos_.emplace_back(net::CopyFrame(identity), *hello);
    } else {
      HandleHello(identity, *hello);
    }
    return;
  }
  if (rank < 0 && std::any_of(waiting_hellos_.begin(), waiting_hellos_.end(), [&](const auto& w) {
        return Key(w.first) == Key(identity);
      })) {
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
  member.info.max_batch = hello.max_batch;
  member.host = hello.host;
  member.pid = hello.pid;
  member.last_seen = Clock::now();
  members_[rank] = std::move(member);
  rank_of_[Key(identity)] = rank;
  ++joined_;
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
      rank = policy_->AddWorker();
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
  if (sharded()) {
    welcome.bounds = bounds_;
    welcome.servers.push_back(endpoint_->address());
    for (int64_t k = 1; k < config_.shard_count; ++k) welcome.servers.push_back(peers_[k]->address);
  }
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
  sync::Actions actions;
  for (int64_t r = 0; r < config_.workers; ++r) {
    policy_->WorkerJoined(r, members_[r]->info, &actions);
    members_[r]->active = true;
    members_[r]->clock_offset = policy_->clock(r);
  }
  last_checkpoint_at_ = Clock::now();
  // Pulls that arrived while the cluster was assembling are answered now.
  for (int64_t r = 0; r < config_.workers; ++r) {
    if (members_[r]->pull_pending) policy_->PullRequested(r, &actions);
  }
  CarryOut(actions, nullptr);
  next_eval_ = iterations_ + config_.eval_every;
  SubmitSnapshot(true);  // the untrained (or resumed) model: accuracy at time zero
}

void ParameterServer::HandlePull(int64_t rank, const proto::Pull& pull) {
  Member& member = *members_[rank];
  if (member.pull_pending) {
    Refuse(member.identity, "worker " + std::to_string(rank), "a pull is already pending",
           false);
    return;
  }
  if (started_ && !member.active) {
    // A worker joining the running job, ready now: the policy counts it from
    // here, its first pull gets the current model.
    sync::Actions actions;
    policy_->WorkerJoined(rank, member.info, &actions);
    member.active = true;
    member.ready = true;
    member.clock_offset = policy_->clock(rank) - pull.clock;
    ++report_.workers_joined;
    spdlog::info("worker {} ({}:{}) trains from iteration {}; {} live workers", rank, member.host,
                 member.pid, iterations_, ActiveWorkers());
    if (tracer_) tracer_->Instant("run", "worker joined", trace::NowMicros(), {{"worker", rank}});
    CarryOut(actions, nullptr);
    UpdateHold();
  }
  if (started_ && pull.clock + member.clock_offset != policy_->clock(rank)) {
    Refuse(member.identity, "worker " + std::to_string(rank),
           "pull for clock " + std::to_string(pull.clock) + ", but the worker has pushed " +
               std::to_string(policy_->clock(rank) - member.clock_offset) + " times",
           false);
    return;
  }
  member.ready = true;
  member.pull_pending = true;
  if (!started_) {
    // A worker pulls once its data is loaded: the run's clock starts when all
    // are ready, so loading data is not counted as training time.
    const bool all_ready = joined_ == config_.workers &&
                           std::all_of(members_.begin(), members_.end(), [](const auto& m) {
                             return m.has_value() && m->pull_pending;
                           });
    if (all_ready) Start();
    return;
  }
  sync::Actions actions;
  policy_->PullRequested(rank, &actions);
  CarryOut(actions, nullptr);
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
  info.clock = push.clock + member.clock_offset;
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
    ++member.refused;
    Refuse(member.identity, who, problem + "; step counted, gradient ignored", false);
  }

  sync::Actions actions;
  if (tracer_) {
    tracer_->Instant("comm", "push", trace::NowMicros(),
                     {{"worker", rank},
                      {"clock", push.clock},
                      {"samples", push.samples},
                      {"staleness", policy_->version() - push.base_version}});
  }
  policy_->PushArrived(rank, info, &actions);
  handling_clock_ = push.clock;
  handling_staged_ = false;
  // The worker spent the time whether or not its push is used.
  ++member.steps;
  member.compute_s += push.compute_us * 1e-6;
  member.straggle_s += push.straggle_us * 1e-6;
  member.wait_s += push.wait_us * 1e-6;
  const bool dropped = std::any_of(actions.begin(), actions.end(), [](const sync::Action& a) {
    return a.kind == sync::Action::Kind::kDrop;
  });
  if (dropped) {
    ++dropped_pushes_;
    wasted_samples_ += push.samples;
  } else {
    member.samples += info.usable ? push.samples : 0;
    samples_applied_ += info.usable ? push.samples : 0;
  }
  CarryOut(actions, gradient);
  // The other shards free their slice of a push this one does not stage.
  if (!handling_staged_) Order({proto::Order::kDiscard, rank, push.clock, 0});
  handling_clock_ = -1;
  AfterPush();
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
    ++member.refused;
    AbandonIncoming(member, "push " + std::to_string(member.incoming_clock) + ": " +
                                finite.status().message() +
                                "; the rest of its gradient is left out");
    return;
  }
  if (!*finite) {
    ++member.refused;
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

void ParameterServer::CarryOut(const sync::Actions& actions,
                               const std::shared_ptr<proto::IncomingTensor>& gradient) {
  using Kind = sync::Action::Kind;
  for (const sync::Action& action : actions) {
    // An answer for a worker no longer here (lost while it was held) has
    // no one to go to.
    const bool addressed = action.kind != Kind::kStage && action.kind != Kind::kApply &&
                           action.kind != Kind::kApplyDelta;
    if (addressed && (action.worker < 0 || action.worker >= static_cast<int64_t>(members_.size()) ||
                      !members_[action.worker].has_value())) {
      continue;
    }
    switch (action.kind) {
      case Kind::kStage: {
        if (gradient == nullptr) break;  // the policy only stages usable pushes
        handling_staged_ = true;
        if (config_.deterministic) {
          // Summed at the next apply, in rank order.
          held_stages_.push_back({action.worker, handling_clock_, action.value, gradient});
          break;
        }
        // Summed chunk by chunk as a streamed gradient arrives.
        store_->Stage(gradient, static_cast<float>(action.value));
        Order({proto::Order::kStage, action.worker, handling_clock_, action.value});
        break;
      }
      case Kind::kApply:
      case Kind::kApplyDelta: {
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
        store_->Apply(action.kind == Kind::kApply ? optimizer_.get() : nullptr,
                      static_cast<float>(action.value), std::move(traced));
        Order({action.kind == Kind::kApply ? proto::Order::kApply : proto::Order::kApplyDelta, -1,
               0, action.value});
        break;
      }
      case Kind::kContinue: {
        if (holding_) {
          deferred_.push_back(action);
          break;
        }
        Member& member = *members_[action.worker];
        proto::Continue reply{action.value != 0, member.next_token, member.next_batch};
        member.next_token = -1;
        member.next_batch = 0;
        Status sent = endpoint_->SendMessage(&member.identity, reply);
        if (!sent.ok()) spdlog::warn("cannot answer worker {}: {}", action.worker, sent.ToString());
        break;
      }
      case Kind::kSyncNow: {
        Member& member = *members_[action.worker];
        // In the worker's own count of its steps.
        const int64_t round = static_cast<int64_t>(action.value) - member.clock_offset;
        Status sent = endpoint_->SendMessage(&member.identity, proto::SyncNow{round});
        if (!sent.ok()) spdlog::warn("cannot sync worker {}: {}", action.worker, sent.ToString());
        break;
      }
      case Kind::kSetBatch:
        members_[action.worker]->next_batch = static_cast<int64_t>(action.value);
        break;
      case Kind::kGrant:
        members_[action.worker]->next_token = static_cast<int64_t>(action.value);
        break;
      case Kind::kReplyModel:
        if (holding_) {
          deferred_.push_back(action);
          break;
        }
        ReplyModel(action.worker);
        break;
      case Kind::kHold:
        break;
      case Kind::kDrop: {
        Member& member = *members_[action.worker];
        if (action.value != 0) {
          // Work the policy expects to throw away (a late push): no one's fault.
          spdlog::debug("worker {}: push dropped: {}", action.worker, action.reason);
        } else {
          Refuse(member.identity, "worker " + std::to_string(action.worker),
                 "push dropped: " + action.reason, false);
        }
        break;
      }
    }
  }
}

void ParameterServer::ReplyModel(int64_t rank) {
  Member& member = *members_[rank];
  member.pull_pending = false;
  member.replied_at = Clock::now();
  // One copy per model version, shared by every reply and evaluation of it;
  // a large model streams out chunk by chunk as its updates are applied.
  proto::Model header{policy_->version(), store_->size(), member.next_batch, member.next_token};
  member.next_batch = 0;
  member.next_token = -1;
  QueueModelReply(*store_, *endpoint_, &member.identity, header, "worker " + std::to_string(rank));
  Order({proto::Order::kReply, rank, 0, static_cast<double>(header.version)});
}

void ParameterServer::AfterPush() {
  const int64_t before = iterations_;
  iterations_ = policy_->iteration();
  if (iterations_ != before) MaybeCheckpoint();
  if (config_.max_iterations > 0 && iterations_ >= config_.max_iterations) {
    if (!limit_reached_) {
      spdlog::info("iteration limit of {} reached", config_.max_iterations);
      limit_reached_ = true;
      SubmitSnapshot(true);
    }
    return;
  }
  if (iterations_ >= next_eval_) {
    next_eval_ = iterations_ + config_.eval_every;
    SubmitSnapshot(false);
  }
}

void ParameterServer::SubmitSnapshot(bool must) {
  // The model of this version exists once its last chunk is applied: it is
  // stamped then (at once, unless a streamed push is still arriving).
  const int64_t iteration = iterations_;
  const int64_t version = policy_->version();
  const int64_t samples = samples_applied_;
  if (sharded()) {
    // The whole model is this shard's slice and the others': each sends its
    // part once its updates are in, and the snapshot is evaluated when all are.
    const int64_t id = next_snapshot_id_++;
    Assembly& assembly = assemblies_[id];
    assembly.snapshot = {0, iteration, version, samples, nullptr};
    assembly.missing = config_.shard_count;
    assembly.must = must;
    Order({proto::Order::kSnapshot, -1, 0, static_cast<double>(id)});
    store_->Snapshot([this, id](std::shared_ptr<const std::vector<float>> values) {
      if (auto it = assemblies_.find(id); it != assemblies_.end()) it->second.snapshot.seconds = Seconds();
      FillSnapshot(id, 0, static_cast<int64_t>(values->size()),
                   [&](std::span<float> out) { std::copy(values->begin(), values->end(), out.begin()); });
    });
    return;
  }
  store_->Snapshot([this, must, iteration, version,
                    samples](std::shared_ptr<const std::vector<float>> values) {
    if (!evaluator_->Submit({Seconds(), iteration, version, samples, std::move(values)}, must)) {
      if (skipped_snapshots_++ == 0) {
        spdlog::warn("evaluation is falling behind training; skipping snapshots until it catches up");
      }
    }
  });
}

void ParameterServer::FillSnapshot(int64_t id, int64_t shard, int64_t count,
                                   const std::function<void(std::span<float>)>& copy) {
  auto it = assemblies_.find(id);
  if (it == assemblies_.end()) return;
  Assembly& assembly = it->second;
  const auto begin = static_cast<size_t>(bounds_[shard]);
  if (count != bounds_[shard + 1] - bounds_[shard]) {
    spdlog::warn("server shard {} sent a slice of {} parameters, not {}; snapshot {} not evaluated",
                 shard, count, bounds_[shard + 1] - bounds_[shard], id);
    assemblies_.erase(it);
    return;
  }
  if (assembly.values == nullptr) {
    assembly.values = std::make_shared<std::vector<float>>(static_cast<size_t>(bounds_.back()));
  }
  copy(std::span<float>(*assembly.values).subspan(begin, static_cast<size_t>(count)));
  if (--assembly.missing > 0) return;
  Snapshot snapshot = assembly.snapshot;
  snapshot.params = std::move(assembly.values);
  const bool must = assembly.must;
  assemblies_.erase(it);
  if (!evaluator_->Submit(std::move(snapshot), must)) {
    if (skipped_snapshots_++ == 0) {
      spdlog::warn("evaluation is falling behind training; skipping snapshots until it catches up");
    }
  }
}

void ParameterServer::AwaitSlices(milliseconds limit) {
  if (!sharded()) return;
  const Clock::time_point deadline = Clock::now() + limit;
  net::Frames frames;
  while (!assemblies_.empty() && Clock::now() < deadline && fatal_.ok()) {
    Result<bool> got = endpoint_->Receive(&frames, kPollSlice);
    if (!got.ok()) return;
    if (!*got || frames.size() < 2) continue;
    auto shard = shard_of_.find(Key(frames[0]));
    if (shard == shard_of_.end()) continue;  // the run is over for workers
    Result<proto::Message> message = proto::DecodeMessage(frames, 1);
    if (message.ok()) HandleShardMessage(shard->second, *message);
  }
  if (!assemblies_.empty()) {
    spdlog::warn("{} snapshot{} not evaluated: the other shards' slices did not come",
                 assemblies_.size(), assemblies_.size() == 1 ? "" : "s");
  }
}

void ParameterServer::SendOrders() {
  if (orders_.empty()) return;
  proto::Orders batch;
  batch.orders.swap(orders_);
  for (int64_t k = 1; k < config_.shard_count; ++k) {
    if (!peers_[k].has_value()) continue;
    Status sent = endpoint_->SendMessage(&peers_[k]->identity, batch);
    if (!sent.ok()) {
      fatal_ = Status::Unavailable("server shard " + std::to_string(k) + " at " +
                                   peers_[k]->address + " lost: " + sent.message());
    }
  }
}

void ParameterServer::HandleShardHello(const zmq::message_t& identity, const proto::Hello& hello) {
  const std::string who = "server shard " + std::to_string(hello.shard) + " (" + hello.host + ":" +
                          std::to_string(hello.pid) + ")";
  if (!sharded()) {
    Refuse(identity, who, "this server is not sharded (no --shard 0/S)", true);
    return;
  }
  if (hello.shards != config_.shard_count || hello.shard < 1 || hello.shard >= config_.shard_count) {
    Refuse(identity, who,
           "shard " + std::to_string(hello.shard) + "/" + std::to_string(hello.shards) +
               " does not fit this job of " + std::to_string(config_.shard_count) + " shards",
           true);
    return;
  }
  std::optional<Peer>& peer = peers_[hello.shard];
  if (peer.has_value()) {
    // A shard lost its state when it went away: the job cannot go on with a
    // fresh one mid-run, nor have two.
    Refuse(identity, who, "shard " + std::to_string(hello.shard) + " is taken", true);
    return;
  }
  if (hello.address.empty()) {
    Refuse(identity, who, "no address for workers to reach it at", true);
    return;
  }
  peer = Peer{net::CopyFrame(identity), hello.address, hello.host, hello.pid, Clock::now()};
  shard_of_[Key(identity)] = hello.shard;
  ++peers_joined_;
  proto::Welcome welcome;
  welcome.model = spec_->Name();
  welcome.policy = policy_->Name();
  welcome.input_dim = spec_->input_dim;
  welcome.classes = spec_->classes;
  welcome.num_params = bounds_.back();
  welcome.shard_index = hello.shard;
  welcome.shard_count = config_.shard_count;
  welcome.seed = config_.seed;
  welcome.lr = config_.lr;
  welcome.momentum = config_.momentum;
  welcome.bounds = bounds_;
  if (Status sent = endpoint_->SendMessage(&identity, welcome); !sent.ok()) {
    spdlog::warn("cannot welcome {}: {}", who, sent.ToString());
  }
  spdlog::info("{} registered: parameters [{}, {}), workers reach it at {} ({}/{} shards)", who,
               bounds_[hello.shard], bounds_[hello.shard + 1], hello.address, peers_joined_ + 1,
               config_.shard_count);
  if (peers_joined_ == config_.shard_count - 1) {
    std::vector<std::pair<zmq::message_t, proto::Hello>> waiting;
    waiting.swap(waiting_hellos_);
    for (auto& [worker, worker_hello] : waiting) HandleHello(worker, worker_hello);
  }
}

void ParameterServer::HandleShardMessage(int64_t shard, proto::Message& message) {
  peers_[shard]->last_seen = Clock::now();
  const std::string who = "server shard " + std::to_string(shard);
  if (auto* slice = std::get_if<proto::Slice>(&message.body)) {
    Result<proto::IncomingTensor> values =
        proto::IncomingTensor::Open(slice->num_params, 0, 0, std::move(message.payload));
    if (!values.ok() || !values->complete()) {
      spdlog::warn("{} sent a bad slice of snapshot {}: {}", who, slice->id,
                   values.ok() ? "incomplete" : values.status().message());
      assemblies_.erase(slice->id);
      return;
    }
    FillSnapshot(slice->id, shard, values->size(),
                 [&](std::span<float> out) { values->CopyTo(0, values->size(), out); });
  } else if (auto* error = std::get_if<proto::Error>(&message.body)) {
    if (error->fatal) {
      fatal_ = Status::Unavailable(who + " gave up: " + error->message);
    } else {
      spdlog::warn("{} reports: {}", who, error->message);
    }
  } else if (!std::holds_alternative<proto::Heartbeat>(message.body)) {
    spdlog::warn("ignoring an unexpected {} from {}", proto::MsgTypeName(proto::TypeOf(message.body)),
                 who);
  }
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
  for (const Evaluation& e : evaluator_->TakeResults()) {
    if (report_.target_reached) break;  // later snapshots do not change the answer
    report_.last_eval = e.result;
    tsv_ << fmt::format("{:.3f}\t{}\t{:.4f}\t{:.4f}\n", e.snapshot.seconds, e.snapshot.iteration,
                        e.result.accuracy, e.result.loss)
         << std::flush;
    spdlog::info("{:7.2f} s  iteration {:6}  accuracy {:.4f}  loss {:.4f}", e.snapshot.seconds,
                 e.snapshot.iteration, e.result.accuracy, e.result.loss);
    if (tracer_) {
      const int64_t snapshot_us = start_us_ + static_cast<int64_t>(e.snapshot.seconds * 1e6);
      tracer_->Span("eval", "eval", e.start_us, e.duration_us,
                    {{"iteration", e.snapshot.iteration},
                     {"accuracy", e.result.accuracy},
                     {"loss", e.result.loss},
                     {"snapshot_us", snapshot_us}});
      tracer_->Counter("accuracy", snapshot_us, e.result.accuracy, {{"iteration", e.snapshot.iteration}});
      tracer_->Counter("loss", snapshot_us, e.result.loss, {{"iteration", e.snapshot.iteration}});
    }
    if (config_.target_accuracy > 0 && e.result.accuracy >= config_.target_accuracy) {
      report_.target_reached = true;
      report_.seconds_to_target = e.snapshot.seconds;
      report_.iterations_to_target = e.snapshot.iteration;
      report_.samples_to_target = e.snapshot.samples;
      if (tracer_) {
        tracer_->Instant("run", "target", trace::NowMicros(),
                         {{"accuracy", e.result.accuracy},
                          {"seconds", e.snapshot.seconds},
                          {"iteration", e.snapshot.iteration}});
      }
    }
  }
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
  for (std::optional<Peer>& peer : peers_) {
    if (!peer.has_value()) continue;
    Status sent = endpoint_->SendMessage(&peer->identity, proto::Heartbeat{now_us});
    if (!sent.ok()) spdlog::debug("heartbeat to {} failed: {}", peer->address, sent.ToString());
  }
}

int64_t ParameterServer::ActiveWorkers() const {
  return std::count_if(members_.begin(), members_.end(),
                       [](const std::optional<Member>& m) { return m.has_value() && m->active; });
}

void ParameterServer::LoseWorker(int64_t rank, const std::string& why) {
  Member& member = *members_[rank];
  const bool was_active = member.active;
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
  std::erase_if(deferred_, [rank](const sync::Action& a) { return a.worker == rank; });
  spdlog::warn("lost {}; going on with {} live worker{}", report_.last_lost, ActiveWorkers(),
               ActiveWorkers() == 1 ? "" : "s");
  if (tracer_) {
    tracer_->Instant("run", "worker lost", trace::NowMicros(), {{"worker", rank}, {"why", why}});
  }
  if (!started_ || !was_active) return;
  sync::Actions actions;
  policy_->WorkerLeft(rank, &actions);
  CarryOut(actions, nullptr);
  UpdateHold();
  AfterPush();  // a round the worker held up may have closed
}

void ParameterServer::CheckSilence() {
  const Clock::time_point now = Clock::now();
  for (size_t k = 1; k < peers_.size(); ++k) {
    // A shard holds a slice of the model no one else has: the run cannot go
    // on without it.
    if (peers_[k].has_value() && now - peers_[k]->last_seen >= config_.worker_timeout) {
      fatal_ = Status::Unavailable(fmt::format(
          "server shard {} at {} lost: silent for {:g} s", k, peers_[k]->address,
          std::chrono::duration<double>(config_.worker_timeout).count()));
    }
  }
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

void ParameterServer::UpdateHold() {
  if (!started_) return;
  const int64_t live = ActiveWorkers();
  const bool hold = live < config_.min_workers;
  if (hold == holding_) return;
  holding_ = hold;
  if (hold) {
    spdlog::warn("training holds: {} live worker{}, fewer than --min-workers {}; waiting for "
                 "workers to join",
                 live, live == 1 ? "" : "s", config_.min_workers);
    if (tracer_) tracer_->Instant("run", "hold", trace::NowMicros(), {{"live", live}});
    return;
  }
  spdlog::info("training goes on with {} live workers", live);
  if (tracer_) tracer_->Instant("run", "resume", trace::NowMicros(), {{"live", live}});
  sync::Actions held;
  held.swap(deferred_);
  CarryOut(held, nullptr);
}

void ParameterServer::MaybeCheckpoint() {
  if (checkpoints_ == nullptr || iterations_ == last_checkpoint_iteration_) return;
  const Clock::time_point now = Clock::now();
  const bool by_count = config_.checkpoint_every_iterations > 0 &&
                        iterations_ >= std::max<int64_t>(last_checkpoint_iteration_, 0) +
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
  Checkpoint checkpoint;
  checkpoint.model = spec_->Name();
  checkpoint.policy = policy_->Name();
  checkpoint.optimizer = optimizer_->Name();
  checkpoint.workers = config_.workers;
  const sync::PolicyState state = policy_->Save();
  checkpoint.iteration = state.iteration;
  checkpoint.version = state.version;
  checkpoint.policy_extra = state.extra;
  checkpoint.samples = samples_applied_;
  checkpoint.seconds = seconds_before_ + Seconds();
  checkpoint.optimizer_state = optimizer_->State();
  last_checkpoint_iteration_ = iterations_;
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

void ParameterServer::StopWorkers(const std::string& reason) {
  for (std::optional<Member>& m : members_) {
    if (!m.has_value()) continue;
    Status sent = endpoint_->SendMessage(&m->identity, proto::Stop{reason});
    if (!sent.ok()) spdlog::debug("cannot stop {}:{}: {}", m->host, m->pid, sent.ToString());
  }
  // The other shards stop after the orders before: they save what those left.
  SendOrders();
  for (std::optional<Peer>& peer : peers_) {
    if (!peer.has_value()) continue;
    Status sent = endpoint_->SendMessage(&peer->identity, proto::Stop{reason});
    if (!sent.ok()) spdlog::debug("cannot stop shard at {}: {}", peer->address, sent.ToString());
  }
}

}  // namespace

std::vector<std::string> ValidateConfig(const ServerConfig& config) {
  std::vector<std::string> problems;
  if (config.workers < 1) problems.push_back("--workers must be at least 1");
  if (config.batch < 1) problems.push_back("--batch must be at least 1");
  if (!(config.lr > 0) || !std::isfinite(config.lr)) problems.push_back("--lr must be positive");
  if (!(config.momentum >= 0 && config.momentum < 1)) {
    problems.push_back("--momentum must be in [0, 1)");
  }
  if (config.threads < 1 || config.threads > 256) problems.push_back("--threads must be in 1..256");
  if (!(config.target_accuracy >= 0 && config.target_accuracy <= 1)) {
    problems.push_back("--target-accuracy must be in [0, 1]");
  }
  if (config.max_iterations < 0) problems.push_back("--max-iterations must not be negative");
  if (!(config.max_seconds >= 0) || !std::isfinite(config.max_seconds)) {
    problems.push_back("--max-seconds must not be negative");
  }
  if (config.eval_every < 1) problems.push_back("--eval-every must be at least 1");
  if (config.heartbeat.count() < 1) problems.push_back("--heartbeat-ms must be at least 1");
  if (config.worker_timeout <= config.heartbeat) {
    problems.push_back("--worker-timeout must be longer than --heartbeat-ms");
  }
  if (config.min_workers < 0 || config.min_workers > config.workers) {
    problems.push_back("--min-workers must be in 0..--workers");
  }
  if (config.checkpoint_every_iterations < 0 || !(config.checkpoint_every_seconds >= 0) ||
      !std::isfinite(config.checkpoint_every_seconds)) {
    problems.push_back("--checkpoint-every must not be negative");
  }
  if (!config.checkpoint.empty() && config.checkpoint_every_iterations == 0 &&
      config.checkpoint_every_seconds == 0) {
    problems.push_back("--checkpoint needs --checkpoint-every N (iterations) or Ts (seconds)");
  }
  if (config.checkpoint.empty() &&
      (config.checkpoint_every_iterations > 0 || config.checkpoint_every_seconds > 0)) {
    problems.push_back("--checkpoint-every needs --checkpoint FILE");
  }
  if (config.policy.staleness < 0) problems.push_back("--staleness must not be negative");
  if (config.curve_secret.empty() != config.curve_allow.empty()) {
    problems.push_back(
        "--curve-secret and --curve-allow go together (CURVE admits only the listed workers)");
  }
  if (config.max_message_bytes < 0) problems.push_back("--max-message-bytes must not be negative");
  if (config.max_connections < 0) problems.push_back("--max-connections must not be negative");
  if (config.max_connections > 0 && config.max_connections < config.workers) {
    problems.push_back("--max-connections must be at least --workers");
  }
  if (config.shard_count < 1 || config.shard_count > kMaxShards || config.shard_index < 0 ||
      config.shard_index >= config.shard_count) {
    problems.push_back("--shard I/S needs 0 <= I < S <= " + std::to_string(kMaxShards));
  } else if (config.shard_index > 0 && config.coordinator.empty()) {
    problems.push_back("--coordinator must not be empty (the address of shard 0)");
  } else if (config.shard_index == 0 && !config.coordinator.empty()) {
    problems.push_back("--coordinator is for shards 1 and up; shard 0 is the coordinator");
  }
  if (config.shard_index == 0 && !config.advertise.empty()) {
    problems.push_back("--advertise is for shards 1 and up (workers reach shard 0 at --bind)");
  }
  if (config.shard_count > 1) {
    // Each would need every shard's part: not there yet.
    if (!config.checkpoint.empty() || !config.resume.empty()) {
      problems.push_back("--checkpoint and --resume do not work with sharded servers yet");
    }
    if (!config.curve_secret.empty()) {
      problems.push_back("--curve-secret does not work with sharded servers yet");
    }
  }
  sync::PolicyConfig probe = config.policy;
  probe.num_workers = std::max<int64_t>(config.workers, 1);
  probe.batch = std::max<int64_t>(config.batch, 1);
  if (Result<std::unique_ptr<sync::Policy>> p = sync::MakePolicy(probe); !p.ok()) {
    problems.push_back("--policy: " + p.status().message());
  }
  if (Result<data::DataSpec> d = data::ParseDataSpec(config.data); !d.ok()) {
    problems.push_back("--data: " + d.status().message());
  }
  // 16 inputs, a 4x4 image, fit every kind of model; the data's own shape is
  // checked once it is loaded.
  if (Result<model::ModelSpec> m = model::ParseModelSpec(config.model, 16, 2); !m.ok()) {
    problems.push_back("--model: " + m.status().message());
  }
  return problems;
}

void WriteRunReport(const RunReport& report, std::ostream& out) {
  // One line per key: the message must not break the format.
  std::string last_lost = report.last_lost;
  std::replace_if(last_lost.begin(), last_lost.end(), [](char c) { return c == '\t' || c == '\n'; }, ' ');
  out << fmt::format(
      "target_reached\t{:d}\nseconds_to_target\t{}\niterations_to_target\t{}\n"
      "samples_to_target\t{}\niterations\t{}\nsamples\t{}\nseconds\t{}\naccuracy\t{}\n"
      "loss\t{}\ncompute_ratio_mean\t{}\ncompute_ratio_min\t{}\nwait_share\t{}\n"
      "wasted_samples\t{}\nsignal\t{}\nworkers_lost\t{}\nlast_lost\t{}\nworkers_joined\t{}\n"
      "resumed_iteration\t{}\ncheckpoints\t{}\n",
      report.target_reached, report.seconds_to_target, report.iterations_to_target,
      report.samples_to_target, report.iterations, report.samples, report.seconds,
      report.last_eval.accuracy, report.last_eval.loss, report.compute_ratio_mean,
      report.compute_ratio_min, report.wait_share, report.wasted_samples, report.signal,
      report.workers_lost, last_lost, report.workers_joined, report.resumed_iteration,
      report.checkpoints);
}

Result<RunReport> RunServer(const ServerConfig& config, std::ostream& tsv,
                            const std::atomic<int>* signal) {
  if (config.shard_index > 0) return RunServerShard(config, signal);
  ParameterServer server(config, tsv, signal);
  return server.Run();
}

}  // namespace dmlps::server
