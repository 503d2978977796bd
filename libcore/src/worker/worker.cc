#include "dmlps/worker/worker.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <Eigen/Core>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>

#include "dmlps/data/dataset.h"
#include "dmlps/model/backend.h"
#include "dmlps/model/model.h"
#include "dmlps/proto/codec.h"
#include "dmlps/sync/policy.h"
#include "dmlps/trace/trace.h"
#include "worker/compute.h"
#include "worker/link.h"
#include "worker/steps.h"

namespace dmlps::worker {
namespace {

using Clock = std::chrono::steady_clock;

Status CheckReadable(const std::string& path) {
  struct stat st {};
  // An IDX file may lie uncompressed beside the ".gz" name the spec gives
  // (the readers take either).
  if (path.ends_with(".gz") && stat(path.c_str(), &st) != 0 &&
      stat(path.substr(0, path.size() - 3).c_str(), &st) == 0) {
    return CheckReadable(path.substr(0, path.size() - 3));
  }
  if (stat(path.c_str(), &st) != 0) return Status::NotFound(path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return Status::NotFound(path + ": not a regular file");
  return Status::Ok();
}

// The mode a Welcome names; no name: sync.
Result<sync::WorkerMode> ModeOf(const proto::Welcome& welcome) {
  if (welcome.mode.empty()) return sync::WorkerMode::kSync;
  Result<sync::WorkerMode> mode = sync::ParseWorkerMode(welcome.mode);
  if (!mode.ok()) {
    return Status::Protocol("the server asks for steps of an unknown kind '" + welcome.mode + "'");
  }
  return mode;
}

class WorkerRunner {
 public:
  // `user`: the caller's computation; null: the built-in model of the
  // server's Welcome over config.data.
  WorkerRunner(const WorkerConfig& config, const std::atomic<int>* signal,
               std::unique_ptr<Computation> user)
      : config_(config), signal_(signal), link_(config, signal), user_(std::move(user)) {}

  Result<WorkerReport> Run();

 private:
  Status Prepare();
  // --announce-layout: what the Hello announces (see WorkerConfig).
  Status PrepareAnnouncement();
  Status Setup();
  // The built-in model the Welcome names, over this worker's shard of config.data.
  Result<std::unique_ptr<Computation>> BuiltIn();
  // Tells the caller's computation about the job and checks that it fits.
  Status JoinUser();
  Status Train();
  // Runs the steps of `mode` until the server stops the worker.
  Status RunMode(sync::WorkerMode mode);
  // Joins the server again after it went away (see ServerLink::Rejoin).
  Status Reconnect();

  const WorkerConfig& config_;
  const std::atomic<int>* signal_;
  ServerLink link_;
  data::DataSpec data_spec_;
  model::Device device_;
  int64_t max_batch_ = 0;                       // sent with Hello
  std::optional<model::ModelSpec> sized_for_;   // the model --max-batch auto was derived for
  std::optional<model::ModelSpec> announced_;   // the built-in model announced as external
  std::unique_ptr<trace::TraceWriter> tracer_;  // null without --trace
  std::unique_ptr<Computation> user_;           // the caller's; null: built_in_
  std::unique_ptr<Computation> built_in_;       // the Welcome's model over config.data
  std::string description_;                     // the model and shard, for the log
  std::unique_ptr<StepComputer> computer_;
  StepState state_;
  WorkerReport report_;
};

Status WorkerRunner::Prepare() {
  DMLPS_RETURN_IF_ERROR(link_.LoadKeys());
  max_batch_ = config_.max_batch;
  if (user_ != nullptr) {  // its data and device are its own
    return config_.announce_layout ? PrepareAnnouncement() : Status::Ok();
  }
  DMLPS_ASSIGN_OR_RETURN(data_spec_, data::ParseDataSpec(config_.data));
  data_spec_.max_features = config_.max_features;
  // Fail before joining when the data is plainly missing: a server should not
  // wait for a worker that can never train.
  DMLPS_RETURN_IF_ERROR(CheckReadable(data_spec_.train_images));
  if (!data_spec_.train_labels.empty())
    DMLPS_RETURN_IF_ERROR(CheckReadable(data_spec_.train_labels));
  // Likewise a device that cannot be used: no CUDA here, no GPU, no driver.
  DMLPS_ASSIGN_OR_RETURN(device_, model::ParseDevice(config_.device));
  std::string device_name;
  DMLPS_ASSIGN_OR_RETURN(model::DeviceMemory memory, model::ProbeDevice(device_, &device_name));
  if (config_.max_batch_auto) {
    // The model's shape needs the data's: a sliver of it tells.
    DMLPS_ASSIGN_OR_RETURN(data::Dataset sample, data::LoadTrain(data_spec_, data::Shard{0, 1000}));
    DMLPS_ASSIGN_OR_RETURN(
        model::ModelSpec spec,
        model::ParseModelSpec(config_.model, sample.dim, std::max<int64_t>(2, sample.classes)));
    max_batch_ = model::MaxBatchForMemory(spec, memory.free_bytes);
    sized_for_ = spec;
    spdlog::info("--max-batch auto: {} samples of {} fit in 80% of the {:.2f} GiB free on {}",
                 max_batch_, spec.Name(), static_cast<double>(memory.free_bytes) / (1 << 30),
                 device_name);
  }
  if (config_.announce_layout) DMLPS_RETURN_IF_ERROR(PrepareAnnouncement());
  // A GPU is worth a line; the CPU, the default, only in debug.
  spdlog::log(device_.is_cuda() ? spdlog::level::info : spdlog::level::debug, "computing on {}",
              device_name);
  return Status::Ok();
}

Status WorkerRunner::PrepareAnnouncement() {
  if (!config_.layout.empty()) {
    link_.Announce(config_.layout, config_.initial_values);
    return Status::Ok();
  }
  if (user_ != nullptr) {
    return Status::Config(
        "a caller's computation announces the layout it gives (WorkerConfig.layout)");
  }
  // The model's shape needs the data's: a sliver of it tells.
  DMLPS_ASSIGN_OR_RETURN(data::Dataset sample, data::LoadTrain(data_spec_, data::Shard{0, 1000}));
  DMLPS_ASSIGN_OR_RETURN(
      model::ModelSpec spec,
      model::ParseModelSpec(config_.model, sample.dim, std::max<int64_t>(2, sample.classes)));
  model::Model model(spec);
  auto values = std::make_shared<std::vector<float>>(static_cast<size_t>(model.num_params()));
  model.Initialize(1, *values);
  announced_ = spec;
  link_.Announce(model::LayoutOf(spec), std::move(values));
  spdlog::info("announcing {} as an external model ({} parameters)", spec.Name(),
               model.num_params());
  return Status::Ok();
}

Result<std::unique_ptr<Computation>> WorkerRunner::BuiltIn() {
  const proto::Welcome& welcome = link_.welcome();
  const data::Shard shard{welcome.shard_index, welcome.shard_count};
  DMLPS_ASSIGN_OR_RETURN(data::Dataset data, data::LoadTrain(data_spec_, shard));
  const bool external = welcome.model == "external";
  if (external && !announced_.has_value()) {
    return Status::Config(
        "the server trains an external model; this worker computes only built-in ones "
        "(pass --announce-layout to offer its --model)");
  }
  const int64_t input_dim = external ? announced_->input_dim : welcome.input_dim;
  const int64_t classes = external ? announced_->classes : welcome.classes;
  DMLPS_RETURN_IF_ERROR(data.ConformTo(input_dim, classes)
                            .WithContext(config_.data + " does not fit the server's model"));
  if (data.rows() == 0) return Status::DataLoss(config_.data + ": this worker's shard is empty");
  // A step makes its batch dense: input size times batch floats (in double,
  // as neither is bounded here) must fit in memory.
  const double step_bytes =
      static_cast<double>(input_dim) * static_cast<double>(welcome.batch) * sizeof(float);
  if (step_bytes > static_cast<double>(data::MachineMemoryBytes())) {
    return Status::DataLoss(config_.data + ": a step of " + std::to_string(welcome.batch) +
                            " samples of " + std::to_string(input_dim) +
                            " features needs more than this machine's memory");
  }
  DMLPS_ASSIGN_OR_RETURN(
      model::ModelSpec spec,
      model::ParseModelSpec(external ? config_.model : welcome.model, input_dim, classes));
  if (sized_for_.has_value() && sized_for_->Name() != spec.Name()) {
    std::string message = "--max-batch auto was derived for ";
    message += sized_for_->Name();
    message += ", but the server trains ";
    message += spec.Name();
    message += "; pass --model ";
    message += spec.Name();
    return Status::Config(message);
  }
  DMLPS_ASSIGN_OR_RETURN(std::unique_ptr<model::Backend> model, model::MakeBackend(spec, device_));
  if (model->num_params() != welcome.num_params) {
    return Status::Protocol("the server's model has " + std::to_string(welcome.num_params) +
                            " parameters, " + spec.Name() + " here has " +
                            std::to_string(model->num_params()));
  }
  description_ =
      spec.Name() + ", shard " + std::to_string(shard.index) + "/" + std::to_string(shard.count);
  return std::unique_ptr<Computation>(
      std::make_unique<DatasetComputation>(std::move(data), std::move(model)));
}

Status WorkerRunner::Setup() {
  const proto::Welcome& welcome = link_.welcome();
  if (welcome.shard_count < 1 || welcome.shard_index < 0 ||
      welcome.shard_index >= welcome.shard_count || welcome.batch < 1 || welcome.chunk < 0 ||
      welcome.token_size < 0 || welcome.local_steps < 0) {
    return Status::Protocol(
        "the server sent an impossible shard, batch, chunk, token size or local step count");
  }
  computer_.reset();  // it refers to the computation replaced here
  // Loading data, or the caller's Join, may take long: the server hears
  // from this worker meanwhile.
  const ServerLink::BusyScope busy(&link_);
  if (user_ == nullptr) {
    DMLPS_ASSIGN_OR_RETURN(built_in_, BuiltIn());
  } else {
    DMLPS_RETURN_IF_ERROR(JoinUser());
  }
  Computation& computation = user_ != nullptr ? *user_ : *built_in_;
  state_.batch = welcome.batch;
  if (!config_.trace.empty() && tracer_ == nullptr) {  // once: a rejoin keeps the trace
    DMLPS_ASSIGN_OR_RETURN(
        tracer_, trace::TraceWriter::Open(config_.trace, "worker-" + std::to_string(welcome.rank)));
    tracer_->Counter("batch", trace::NowMicros(), static_cast<double>(state_.batch));
  }
  const uint64_t seed = welcome.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(welcome.rank);
  StragglerSpec straggler = config_.straggler;
  straggler.seed ^= seed;
  computer_ = std::make_unique<StepComputer>(
      computation, seed, StragglerProfile(straggler, welcome.rank, welcome.num_workers),
      tracer_.get(), [this](std::chrono::microseconds d) { return link_.Pause(d); },
      [this](int delta) { link_.SetBusy(delta); });
  if (welcome.samples_done > 0) {
    computer_->SkipSamples(welcome.samples_done);
    spdlog::info(
        "worker {} goes on through its data after the {} samples its rank's earlier "
        "workers processed",
        welcome.rank, welcome.samples_done);
  }
  spdlog::info("worker {} of {}: policy {} ({} steps), model {} with {} samples, batch {}",
               welcome.rank, welcome.num_workers, welcome.policy, welcome.mode, description_,
               computation.num_samples(), welcome.batch);
  return Status::Ok();
}

Status WorkerRunner::JoinUser() {
  const proto::Welcome& welcome = link_.welcome();
  JobInfo job;
  VisitJobFields([](const char* /*name*/, auto& field, const auto& told) { field = told; }, job,
                 welcome);
  DMLPS_RETURN_IF_ERROR(user_->Join(job));
  if (user_->num_params() != welcome.num_params) {
    return Status::Config("the server's model " + welcome.model + " has " +
                          std::to_string(welcome.num_params) + " parameters, the computation " +
                          std::to_string(user_->num_params()));
  }
  if (user_->num_samples() < 1) return Status::Config("the computation holds no samples");
  description_ = welcome.model + " (the caller's computation)";
  return Status::Ok();
}

Status WorkerRunner::Train() {
  DMLPS_RETURN_IF_ERROR(Setup());
  const Clock::time_point start = Clock::now();
  // A rejoin keeps the mode: a server that comes back with another job is refused.
  const Result<sync::WorkerMode> mode = ModeOf(link_.welcome());
  Status status = mode.ok() ? RunMode(*mode) : mode.status();
  while (!status.ok() && link_.server_lost() && !link_.stopped() && !link_.Interrupted()) {
    spdlog::warn("{}; reconnecting for up to {:g} s", status.message(),
                 config_.reconnect_timeout.count() / 1000.0);
    status = Reconnect();
    if (!status.ok() || link_.stopped()) break;
    status = RunMode(*mode);
  }
  report_.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  report_.stop_reason = link_.stop_reason();
  return status;
}

Status WorkerRunner::Reconnect() {
  Result<bool> moved = link_.Rejoin();
  report_.rank = link_.rank();
  report_.reconnects = link_.reconnects();
  DMLPS_RETURN_IF_ERROR(moved.status());
  if (link_.stopped()) return Status::Ok();  // the run ended meanwhile
  if (*moved) DMLPS_RETURN_IF_ERROR(Setup());
  state_.token = -1;
  spdlog::info("rejoined the server at {} as worker {}", config_.link.server, link_.welcome().rank);
  return Status::Ok();
}

Status WorkerRunner::RunMode(sync::WorkerMode mode) {
  StepContext steps(link_, *computer_, state_, tracer_.get(), report_);
  return RunSteps(mode, steps);
}

Result<WorkerReport> WorkerRunner::Run() {
  Eigen::setNbThreads(static_cast<int>(config_.threads));
  DMLPS_RETURN_IF_ERROR(Prepare());
  Status joined = link_.Join(max_batch_);
  report_.rank = link_.rank();
  report_.signal = signal_ != nullptr ? signal_->load() : 0;
  if (report_.signal != 0) return report_;
  DMLPS_RETURN_IF_ERROR(joined);
  Status trained = Train();
  report_.signal = signal_ != nullptr ? signal_->load() : 0;
  if (!trained.ok()) {
    link_.Leave(report_.signal != 0 ? "worker interrupted" : trained.message());
  }
  if (report_.signal != 0) return report_;
  DMLPS_RETURN_IF_ERROR(trained);
  spdlog::info(
      "stopped by the server ({}): {} steps, {} samples; compute {:.1f} s, "
      "straggle {:.1f} s, wait {:.1f} s, send {:.1f} s of {:.1f} s",
      report_.stop_reason, report_.steps, report_.samples, report_.compute_s, report_.straggle_s,
      report_.wait_s, report_.comm_s, report_.seconds);
  return report_;
}

}  // namespace

std::vector<std::string> ValidateConfig(const WorkerConfig& config) {
  std::vector<std::string> problems = ValidateStragglerSpec(config.straggler);
  if (config.rank < -1) problems.push_back("--rank must not be negative");
  if (config.threads < 1 || config.threads > 1024)
    problems.push_back("--threads must be in [1, 1024]");
  if (config.max_batch < 0) problems.push_back("--max-batch must not be negative");
  if (Result<model::Device> d = model::ParseDevice(config.device); !d.ok()) {
    problems.push_back("--device: " + d.status().message());
  }
  if (!config.layout.empty()) {
    Result<int64_t> n = model::ValidateLayout(config.layout);
    if (!n.ok()) {
      problems.push_back("the layout: " + n.status().message());
    } else if (config.initial_values == nullptr ||
               static_cast<int64_t>(config.initial_values->size()) != *n) {
      problems.push_back("the layout has " + std::to_string(*n) + " parameters, the initial " +
                         "values " +
                         std::to_string(config.initial_values ? config.initial_values->size() : 0));
    }
  }
  if (config.max_batch_auto) {
    if (Result<model::ModelSpec> m = model::ParseModelSpec(config.model, 16, 2); !m.ok()) {
      problems.push_back("--model: " + m.status().message());
    }
  }
  if (config.link.connect_timeout.count() <= 0)
    problems.push_back("--connect-timeout must be positive");
  if (config.link.server_timeout.count() <= 0)
    problems.push_back("--server-timeout must be positive");
  if (config.link.curve_secret.empty() != config.link.curve_server_key.empty()) {
    problems.push_back("--curve-secret and --curve-server-key go together");
  }
  if (config.reconnect_timeout.count() < 0) {
    problems.push_back("--reconnect-timeout must not be negative");
  }
  if (config.link.heartbeat.count() < 1) problems.push_back("--heartbeat-ms must be at least 1");
  if (Result<data::DataSpec> d = data::ParseDataSpec(config.data); !d.ok()) {
    problems.push_back("--data: " + d.status().message());
  }
  return problems;
}

Result<WorkerReport> RunWorker(const WorkerConfig& config, const std::atomic<int>* signal) {
  WorkerRunner runner(config, signal, nullptr);
  return runner.Run();
}

Result<WorkerReport> RunWorker(const WorkerConfig& config, std::unique_ptr<Computation> computation,
                               const std::atomic<int>* signal) {
  if (computation == nullptr) return Status::InvalidArgument("RunWorker: no computation given");
  WorkerRunner runner(config, signal, std::move(computation));
  return runner.Run();
}

}  // namespace dmlps::worker
