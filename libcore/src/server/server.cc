#include "dmlps/server/server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "dmlps/cli/status_line.h"
#include "dmlps/data/dataset.h"
#include "dmlps/net/secret.h"
#include "dmlps/sync/summary.h"
#include "server/aggregate.h"
#include "server/evaluation_log.h"
#include "server/listen_options.h"
#include "server/parameter_server.h"
#include "server/run_report.h"
#include "server/shard.h"
#include "server/shard_recovery.h"
#include "server/welcome.h"

namespace dmlps::server {

Status ParameterServer::Setup() {
  // Keys first: a bad key file should not wait for the data to load.
  DMLPS_ASSIGN_OR_RETURN(net::BindOptions bind_options, ReadServerKeys(config_));
  if (!config_.secret_file.empty()) {
    DMLPS_ASSIGN_OR_RETURN(secret_, net::ReadSecretFile(config_.secret_file));
  }
  std::unique_ptr<SnapshotEvaluator> evaluator;
  if (external()) {
    DMLPS_RETURN_IF_ERROR(SetUpExternal(bind_options));
    if (model_ == nullptr) return Status::Ok();  // a signal came first
    bind_options.max_frame_bytes = external_->max_frame_bytes();
  } else {
    DMLPS_ASSIGN_OR_RETURN(data::DataSpec data_spec, data::ParseDataSpec(config_.job.data));
    data_spec.max_features = config_.max_features;
    DMLPS_ASSIGN_OR_RETURN(data::Dataset test_set, data::LoadTest(data_spec));
    if (test_set.rows() == 0) return Status::DataLoss(config_.job.data + ": the test set is empty");
    std::vector<float> params;
    DMLPS_ASSIGN_OR_RETURN(model_, ServerModel::BuiltIn(config_, test_set, &params));
    DMLPS_RETURN_IF_ERROR(SetUpParams(
        std::move(params), fmt::format("{} on {} test samples", model_->Name(), test_set.rows())));
    if (!config_.remote_evaluator) {
      evaluator = std::make_unique<Evaluator>(*model_->spec(), std::move(test_set));
    }
    if (!config_.trace.empty()) {
      DMLPS_ASSIGN_OR_RETURN(tracer_, trace::TraceWriter::Open(config_.trace, "server-0"));
    }
    DMLPS_RETURN_IF_ERROR(SetServerLimits(config_, model_->bounds(), &bind_options));
    DMLPS_ASSIGN_OR_RETURN(net::Endpoint endpoint,
                           net::Endpoint::Bind(context_, config_.bind, bind_options));
    endpoint_.emplace(std::move(endpoint));
  }
  if (config_.remote_evaluator) {
    // The evaluator gets whole snapshots, whatever the shards.
    proto::Welcome welcome = JobWelcome(config_, model_->spec(), policy_->Name());
    welcome.num_params = model_->bounds().back();
    auto remote = std::make_unique<RemoteEvaluator>(
        *endpoint_, std::move(welcome), secret_, config_.evaluator_timeout,
        [this] { (void)desk_->HandleNext(kPollSlice); });
    remote_ = remote.get();
    evaluator = std::move(remote);
  } else if (external()) {
    evaluator = std::make_unique<NoEvaluator>();
    spdlog::info("no evaluator (--evaluator): this run logs no accuracy");
  }
  StartCoordinator();
  model_->ShareNorm(*shards_);
  SetUpSinks(std::move(evaluator), bind_options.max_frame_bytes);
  rollback_.emplace(config_, *shards_, *desk_, *checkpoints_, *driver_, report_);
  spdlog::info("listening on {}, waiting for {} worker{}{}", endpoint_->address(),
               config_.job.workers, config_.job.workers == 1 ? "" : "s",
               config_.remote_evaluator ? " and the evaluator" : "");
  if (!config_.endpoint_file.empty() && !external()) {
    DMLPS_RETURN_IF_ERROR(WriteEndpointFile(config_.endpoint_file, endpoint_->address()));
  }
  if (!timer_.continues()) WriteEvaluationHeader(tsv_);
  AnswerHeldHellos();
  return Status::Ok();
}

Status ParameterServer::SetUpParams(std::vector<float> params, const std::string& what) {
  DMLPS_RETURN_IF_ERROR(SetUpPolicy());
  if (!config_.resume.empty()) DMLPS_RETURN_IF_ERROR(Resume(&params));
  model_->Hold(std::move(params));
  spdlog::info("model {} ({} parameters), policy {} (workers: {}), {}", what,
               model_->bounds().back(), policy_->Name(), sync::WorkerModeName(policy_->mode()),
               model_->optimizer().Name());
  if (const optim::OptimizerSettings settings = ServerOptimizerSettings(config_);
      !settings.Plain()) {
    spdlog::info("optimizer: {}", settings.Describe());
  }
  if (sharded()) {
    spdlog::info("shard 0 of {}: parameters [0, {}); waiting for the other shards",
                 config_.shard_count, model_->bounds()[1]);
  }
  return Status::Ok();
}

Status ParameterServer::SetUpPolicy() {
  // sync-switch places its switch by the run's target or iteration limit.
  sync::PolicyConfig policy_config = sync::WithJob(config_.policy, config_.job);
  // auto: no round waits for a decision's predictions.
  policy_config.decide_in_background = true;
  DMLPS_ASSIGN_OR_RETURN(
      std::unique_ptr<sync::Policy> policy,
      config_.make_policy ? config_.make_policy(policy_config) : sync::MakePolicy(policy_config));
  // Its sinks hold it: they are connected once made (SetUpSinks).
  driver_.emplace(std::move(policy),
                  sync::DriverOptions{.eval_every = config_.job.eval_every,
                                      .max_iterations = config_.job.max_iterations,
                                      .min_workers = config_.min_workers});
  policy_ = &driver_->policy();
  return Status::Ok();
}

void ParameterServer::SetUpSinks(std::unique_ptr<SnapshotEvaluator> evaluator,
                                 int64_t max_message_bytes) {
  // ValidateConfig checked the rule.
  Aggregation aggregation = ParseAggregation(config_.aggregate).value();
  // Centred clipping takes the momentum per worker; the step then has none
  // (ServerOptimizerSettings).
  if (aggregation.rule == Aggregation::Rule::kCenteredClip)
    aggregation.momentum = config_.job.momentum;
  updates_.emplace(model_->store(), model_->optimizer(), *shards_, config_.deterministic,
                   tracer_.get(), aggregation);
  evaluations_.emplace(config_, std::move(evaluator), tsv_, tracer_.get(), timer_, *driver_,
                       model_->store(), *shards_, report_);
  checkpoints_.emplace(
      config_,
      CheckpointJob{model_->Identity(policy_->Name()), model_->layout(), model_->bounds().back(),
                    seconds_before_, report_.resumed_iteration},
      *driver_, model_->store(), model_->optimizer(), *shards_, timer_);
  events_.emplace(config_, *evaluations_, *checkpoints_, tracer_.get());
  WorkerDeskOptions options =
      DeskOptions(config_, policy_->mode(), model_->layout(), max_message_bytes);
  options.peer = [this](const zmq::message_t& identity, proto::Message& message) {
    return HandlePeer(identity, message);
  };
  desk_.emplace(
      options, *endpoint_, *shards_, *driver_, model_->store(), tracer_.get(),
      [this] {
        workers_ready_ = true;
        if (remote_ == nullptr || remote_->joined_once()) {
          Start();
        } else {
          spdlog::info("all workers ready; training starts once the evaluator has joined");
        }
      },
      [this](int64_t rank) {
        return WorkerWelcome(config_, model_->spec(), *policy_, rank, model_->bounds().back(),
                             model::StateFloats(model_->layout()));
      });
  driver_->Connect({.replies = *desk_, .updates = *updates_, .events = *events_});
}

bool ParameterServer::Finished() const {
  return report_.target_reached || driver_->limit_reached() || report_.signal != 0;
}

Status ParameterServer::Resume(std::vector<float>* params) {
  DMLPS_ASSIGN_OR_RETURN(const Checkpoint checkpoint, model_->Resume(policy_->Name()));
  *params = *checkpoint.params;
  driver_->Restore(SavedPolicyState(checkpoint), checkpoint.samples);
  seconds_before_ = checkpoint.seconds;
  report_.resumed_iteration = checkpoint.iteration;
  spdlog::info("resuming from {}: iteration {}, model version {}, {} samples trained, {:.1f} s",
               config_.resume, checkpoint.iteration, checkpoint.version, checkpoint.samples,
               checkpoint.seconds);
  return Status::Ok();
}

Result<RunReport> ParameterServer::Run() {
  // Evaluation gets one core at most: the cores belong to training.
  Eigen::setNbThreads(1);
  DMLPS_RETURN_IF_ERROR(Setup());
  if (!desk_.has_value()) return report_;  // interrupted before the model was known
  last_heartbeat_ = Clock::now();
  DMLPS_RETURN_IF_ERROR(WaitForWorkers());
  DMLPS_RETURN_IF_ERROR(Train());
  return Finish();
}

Status ParameterServer::WaitForWorkers() {
  // On a terminal, how many have joined so far, until training starts.
  cli::StatusLine status;
  const Clock::time_point begin = Clock::now();
  while (!timer_.started() && !Finished()) {
    DMLPS_RETURN_IF_ERROR(Turn());
    if (rejoining_ && Clock::now() - begin >= config_.rejoin_timeout) {
      return rollback_->RejoinTimedOut();
    }
    const double waited = std::chrono::duration<double>(Clock::now() - begin).count();
    status.Show(desk_->joined() < config_.job.workers
                    ? fmt::format("waiting for workers: {} of {} joined ({:.0f} s)",
                                  desk_->joined(), config_.job.workers, waited)
                    : fmt::format("all {} workers joined, loading their data ({:.0f} s)",
                                  config_.job.workers, waited));
  }
  return Status::Ok();
}

Status ParameterServer::Train() {
  while (!Finished()) DMLPS_RETURN_IF_ERROR(Turn());
  return Status::Ok();
}

Status ParameterServer::Turn() {
  DMLPS_RETURN_IF_ERROR(desk_->HandleNext(kPollSlice));
  evaluations_->Collect();
  if (!evaluations_->unfit().ok()) {
    desk_->Stop(evaluations_->unfit().message());
    return evaluations_->unfit();
  }
  if (signal_ != nullptr && signal_->load() != 0) report_.signal = signal_->load();
  if (timer_.started() && config_.job.max_seconds > 0 &&
      timer_.Seconds() >= config_.job.max_seconds && !driver_->limit_reached()) {
    spdlog::info("time limit of {} s reached", config_.job.max_seconds);
    driver_->EndRun();
  }
  if (Clock::now() - last_heartbeat_ >= config_.heartbeat) {
    last_heartbeat_ = Clock::now();
    desk_->SendHeartbeats();
    desk_->CheckSilence();
    if (remote_ != nullptr) remote_->SendHeartbeat(trace::NowMicros());
  }
  if (timer_.started()) checkpoints_->MaybeTake();
  if (remote_ != nullptr) {
    remote_->CheckTimeout();
    if (workers_ready_ && !timer_.started() && remote_->joined_once()) Start();
  }
  desk_->pushes().CloseStalled();
  desk_->DropUnreading();
  shards_->SendOrders();
  checkpoints_->Commit();
  if (!shards_->fatal().ok()) {
    if (rollback_->Begin()) return shards_->fatal();
    desk_->Stop("a server shard was lost");
    return shards_->fatal();
  }
  return Status::Ok();
}

Result<RunReport> ParameterServer::Finish() {
  report_.seconds = timer_.Seconds();
  report_.iterations = driver_->iteration();
  const std::string reason =
      EndReason(report_, {config_.job.target_accuracy, config_.job.target_loss});
  if (!report_.target_reached && report_.signal == 0) {
    // The last snapshot may wait for chunks still on their way.
    desk_->DrainStreams(kDrainLimit);
    // The other shards' slices of the last snapshots.
    shards_->SendOrders();
    shards_->AwaitSlices(kDrainLimit);
  }
  if (!config_.save_model.empty()) {
    if (Status saved = model_->Save(); !saved.ok()) {
      desk_->Stop(reason);
      return saved;
    }
  }
  desk_->Stop(reason);
  report_.checkpoints = checkpoints_->Finish();
  const Turnover& turnover = desk_->turnover();
  report_.workers_lost = turnover.lost;
  report_.last_lost = turnover.last_lost;
  report_.workers_joined = turnover.joined;
  if (report_.workers_lost > 0 || report_.workers_joined > 0) {
    spdlog::info("membership: {} workers lost (last: {}), {} joined while training",
                 report_.workers_lost, report_.last_lost, report_.workers_joined);
  }
  // Snapshots taken before the end still count, unless the run ended early.
  evaluations_->Finish(!report_.target_reached && report_.signal == 0);
  if (remote_ != nullptr) remote_->Stop(reason);
  Summarize();
  if (!evaluations_->unfit().ok()) return evaluations_->unfit();
  return report_;
}

void ParameterServer::Summarize() {
  // Compute ratio: the share of the run a worker spent computing, its emulated
  // slowness included (it stands for a slower machine's compute). The
  // workers' totals are this server's: after a rollback, of its time alone.
  const double seconds = timer_.started() ? report_.seconds - timer_.SecondsBefore() : 0;
  const std::vector<sync::WorkerTotals> totals = desk_->LogTotals(seconds);
  if (tracer_) {
    tracer_->Instant("run", "end", trace::NowMicros(),
                     {{"seconds", report_.seconds}, {"iterations", report_.iterations}});
    if (Status flushed = tracer_->Flush(); !flushed.ok()) spdlog::warn("{}", flushed.message());
  }
  const sync::RunSummary summary = sync::Summarize(totals, seconds);
  report_.compute_ratio_mean = summary.compute_ratio_mean;
  report_.compute_ratio_min = summary.compute_ratio_min;
  report_.wasted_samples = driver_->wasted_samples();
  report_.samples = driver_->samples_applied();
  report_.wait_share = summary.wait_share;
  report_.bytes_per_worker = summary.bytes_sent_mean;
  const auto stepped = std::ranges::count_if(totals, [](const auto& t) { return t.steps > 0; });
  if (stepped > 0) {
    report_.model_bytes_per_worker =
        static_cast<double>(desk_->model_bytes_sent()) / static_cast<double>(stepped);
  }
  LogRunSummary(report_, policy_->Name(), {config_.job.target_accuracy, config_.job.target_loss},
                evaluations_->skipped(), driver_->dropped_pushes());
}

void ParameterServer::Start() {
  timer_.Start();
  if (tracer_) {
    tracer_->Instant("run", "start", timer_.own_start_us(),
                     {{"policy", policy_->Name()},
                      {"model", config_.job.model},
                      {"workers", config_.job.workers},
                      {"target", config_.job.target_accuracy}});
  }
  spdlog::info("all {} workers ready; training {}", config_.job.workers,
               report_.resumed_iteration >= 0
                   ? "goes on from iteration " + std::to_string(report_.resumed_iteration)
                   : std::string("starts"));
  checkpoints_->Start();
  // Pulls that arrived while the cluster was assembling are answered now;
  // the untrained (or resumed) model is evaluated: accuracy at time zero.
  driver_->Start();
}

void ParameterServer::StartCoordinator() {
  proto::Welcome shard_welcome = JobWelcome(config_, model_->spec(), policy_->Name());
  shard_welcome.num_workers = config_.job.workers;
  // The other shards must resume their slices of this same version.
  shard_welcome.resume_version = report_.resumed_iteration >= 0 ? policy_->version() : -1;
  shards_ = std::make_unique<ShardCoordinator>(
      *endpoint_, model_->bounds(), std::move(shard_welcome),
      [this](Snapshot snapshot, bool must) {
        evaluations_->SubmitWhole(std::move(snapshot), must);
      },
      [this](const zmq::message_t& identity, const proto::Hello& hello, const net::Sender& sender) {
        desk_->admissions().HandleHello(identity, hello, sender);
      });
  // The other shards get their slices of an external model when they register.
  if (external_.has_value() && sharded()) {
    shards_->SetExternalModel(model_->layout(), external_->TakeInitial());
  }
  if (config_.curve_secret.empty()) shards_->RequireSecret(secret_);
}

Status ParameterServer::SetUpExternal(net::BindOptions bind_options) {
  if (!config_.trace.empty()) {
    DMLPS_ASSIGN_OR_RETURN(tracer_, trace::TraceWriter::Open(config_.trace, "server-0"));
  }
  external_.emplace(config_, secret_);
  std::vector<float> params;
  DMLPS_RETURN_IF_ERROR(
      external_->Open(context_, std::move(bind_options), signal_, &endpoint_, &params));
  const std::vector<model::TensorSpec>& layout = external_->layout();
  if (layout.empty()) {
    report_.signal = signal_->load();  // a signal came first: the one way Open leaves it empty
    return Status::Ok();
  }
  DMLPS_ASSIGN_OR_RETURN(const int64_t num_params, model::ValidateLayout(layout));
  DMLPS_ASSIGN_OR_RETURN(model_, ServerModel::Make(config_, std::nullopt, layout, num_params));
  return SetUpParams(std::move(params), fmt::format("external, {} tensors", layout.size()));
}

bool ParameterServer::HandlePeer(const zmq::message_t& identity, proto::Message& message) {
  if (external_.has_value() && std::holds_alternative<proto::Hello>(message.body)) {
    external_->BoundNewPeer();
  }
  return remote_ != nullptr && remote_->Handle(identity, message);
}

void ParameterServer::AnswerHeldHellos() {
  if (!external_.has_value()) return;  // a built-in model holds none
  for (const HelloHold::Held& held : external_->TakeHeldHellos()) {
    proto::Message message{proto::Body(held.hello), {}};
    if (!HandlePeer(held.identity, message)) desk_->admissions().AnswerHeld(held);
  }
}

Result<RunReport> RunServer(const ServerConfig& config, std::ostream& tsv,
                            const std::atomic<int>* signal) {
  if (config.shard_index > 0) return RunServerShard(config, signal);
  if (config.shard_count > 1 && !config.checkpoint.empty()) {
    return RunRecoverableShardZero(config, tsv, signal);
  }
  ParameterServer server(config, tsv, signal);
  return server.Run();
}

}  // namespace dmlps::server
