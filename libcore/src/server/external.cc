#include "server/external.h"

#include <spdlog/spdlog.h>

#include <cmath>
#include <utility>

#include "dmlps/net/secret.h"
#include "dmlps/server/checkpoint.h"
#include "dmlps/sync/registry.h"
#include "server/listen_options.h"
#include "server/loop.h"
#include "server/shard.h"

namespace dmlps::server {

ExternalModel::ExternalModel(const ServerConfig& config, std::string secret)
    : config_(config),
      secret_(std::move(secret)),
      held_hellos_(config.job.workers + kConnectionHeadroom + config.shard_count,
                   kMaxHeldHelloBytes) {}

Status ExternalModel::Open(zmq::context_t& context, net::BindOptions bind_options,
                           const std::atomic<int>* signal, std::optional<net::Endpoint>* endpoint,
                           std::vector<float>* params) {
  if (!config_.resume.empty()) {
    // The checkpoint's layout is the model's; every worker must announce it.
    DMLPS_ASSIGN_OR_RETURN(Checkpoint checkpoint, ReadCheckpointFile(config_.resume));
    if (checkpoint.layout.empty()) {
      return Status::Config(config_.resume + ": a checkpoint of model " + checkpoint.model +
                            ", which records no layout; this run's model is external");
    }
    layout_ = checkpoint.layout;
    // The whole model's size, not the checkpoint's: a shard's checkpoint
    // holds its slice only, and the other shards are sent their slices of
    // these values (placeholders: they resume their own checkpoints).
    DMLPS_ASSIGN_OR_RETURN(const int64_t whole, model::ValidateLayout(layout_));
    params->assign(static_cast<size_t>(whole), 0.f);
  } else if (!config_.initial.empty()) {
    DMLPS_RETURN_IF_ERROR(ReadInitialModel(params));
  }
  DMLPS_RETURN_IF_ERROR(Bind(context, std::move(bind_options), endpoint));
  if (layout_.empty()) {
    spdlog::info(
        "listening on {}; the worker presenting the job secret announces the external model",
        endpoint_->address());
    net::Frames frames;
    while (layout_.empty()) {
      if (signal != nullptr && signal->load() != 0) return Status::Ok();
      DMLPS_ASSIGN_OR_RETURN(bool got, endpoint_->Receive(&frames, kPollSlice));
      if (got) TakeLayoutMessage(frames, params);
    }
  }
  DMLPS_ASSIGN_OR_RETURN(const int64_t num_params, model::ValidateLayout(layout_));
  if (config_.shard_count > 1) initial_ = std::make_shared<const std::vector<float>>(*params);
  return LimitToModel(num_params);
}

Status ExternalModel::Bind(zmq::context_t& context, net::BindOptions bind_options,
                           std::optional<net::Endpoint>* endpoint) {
  if (!layout_.empty()) {
    // Known before binding: the limits a built-in model of its size has.
    DMLPS_ASSIGN_OR_RETURN(const int64_t whole, model::ValidateLayout(layout_));
    DMLPS_RETURN_IF_ERROR(
        SetServerLimits(config_, ShardBounds(whole, config_.shard_count), &bind_options));
    max_frame_bytes_ = bind_options.max_frame_bytes;
  } else {
    // Announced by a worker: a message may be as large as --max-message-
    // bytes allows, by default the largest frame taken; each peer may be
    // one such message ahead of the server (the announcer's Hello), and its
    // send queue holds what a model of that size needs (once the model is
    // known, the connections open get the model's own: LimitToModel).
    max_frame_bytes_ =
        config_.max_message_bytes > 0 ? config_.max_message_bytes : net::kMaxFrameBytes;
    bind_options.max_frame_bytes = max_frame_bytes_;
    bind_options.max_unread_bytes = max_frame_bytes_ + kUnreadHeadroom;
    bind_options.max_queued_messages = MaxQueuedMessages(max_frame_bytes_);
    bind_options.max_connections = MaxConnections();
  }
  DMLPS_ASSIGN_OR_RETURN(net::Endpoint bound,
                         net::Endpoint::Bind(context, config_.bind, bind_options));
  endpoint->emplace(std::move(bound));
  endpoint_ = &**endpoint;
  if (!config_.endpoint_file.empty()) {
    DMLPS_RETURN_IF_ERROR(WriteEndpointFile(config_.endpoint_file, endpoint_->address()));
  }
  return Status::Ok();
}

int64_t ExternalModel::MaxConnections() const {
  return config_.max_connections > 0
             ? config_.max_connections
             : config_.job.workers + kConnectionHeadroom + config_.shard_count - 1;
}

Status ExternalModel::ReadInitialModel(std::vector<float>* params) {
  DMLPS_ASSIGN_OR_RETURN(Checkpoint initial, ReadCheckpointFile(config_.initial));
  const std::string& file = config_.initial;
  if (initial.layout.empty()) {
    return Status::DataLoss(file + ": --initial needs a file with a layout (a model of " +
                            initial.model + " has none); dmlps.torch.save_initial writes one");
  }
  DMLPS_ASSIGN_OR_RETURN(const int64_t whole, model::ValidateLayout(initial.layout));
  if (initial.shard_count != 1 || static_cast<int64_t>(initial.params->size()) != whole) {
    return Status::DataLoss(file + ": holds " + std::to_string(initial.params->size()) +
                            " values of a model of " + std::to_string(whole) +
                            "; --initial needs the whole model");
  }
  for (const float v : *initial.params) {
    if (!std::isfinite(v)) return Status::DataLoss(file + ": the values hold NaN or infinity");
  }
  layout_ = std::move(initial.layout);
  params->assign(initial.params->begin(), initial.params->end());
  spdlog::info("the external model from {}: {} tensors, {} floats", file, layout_.size(), whole);
  return Status::Ok();
}

Status ExternalModel::LimitToModel(int64_t num_params) {
  const int64_t model_bytes = num_params * static_cast<int64_t>(sizeof(float));
  const int64_t max_bytes =
      config_.max_message_bytes > 0 ? config_.max_message_bytes : model_bytes + kMessageHeadroom;
  DMLPS_RETURN_IF_ERROR(
      endpoint_->SetConnectionLimits(MaxConnections(), 4 * max_bytes + kUnreadHeadroom));
  queue_limit_ = MaxQueuedMessages(model_bytes);
  return endpoint_->SetSendQueueLimit(queue_limit_);
}

void ExternalModel::BoundNewPeer() {
  if (queue_limit_ <= 0) return;
  if (Status limited = endpoint_->SetSendQueueLimit(queue_limit_); !limited.ok()) {
    spdlog::warn("cannot bound the send queue of a new peer: {}", limited.message());
  }
}

void ExternalModel::TakeLayoutMessage(net::Frames& frames, std::vector<float>* params) {
  if (frames.size() < 2) return;
  zmq::message_t identity = net::CopyFrame(frames[0]);
  const std::string who = "peer " + HexPrefix(identity);
  auto refuse = [&](const std::string& why) {
    spdlog::warn("refused {}: {}", who, why);
    Status sent = endpoint_->SendMessage(&identity, proto::Error{why, true, false});
    if (!sent.ok()) spdlog::debug("could not tell {} why: {}", who, sent.ToString());
  };
  Result<proto::Message> message = DecodeBounded(frames, max_frame_bytes_);
  if (!message.ok()) return refuse(message.status().message());
  auto* hello = std::get_if<proto::Hello>(&message->body);
  if (hello == nullptr) return;  // a worker waiting for its Welcome keeps itself alive
  if (hello->shard >= 0 && !endpoint_->LastSenderMayBeShard()) {
    return refuse("a server shard must connect with the servers' key pair (--curve-secret)");
  }
  if (hello->layout.empty() && !hello->evaluator && hello->shard < 0) {
    return refuse(
        "this server trains an external model: a worker must announce its layout "
        "(dmlps-worker --announce-layout)");
  }
  if (hello->evaluator || hello->shard >= 0 || !net::SecretMatches(hello->secret, secret_)) {
    // An evaluator, a shard (it gets its slice) or a worker without the
    // role: answered once the model is known.
    if (Status held = held_hellos_.Hold(identity, std::move(*hello), endpoint_->LastSender());
        !held.ok()) {
      return refuse(held.message());
    }
    endpoint_->AdmitSender();
    return;
  }
  Result<int64_t> num_params = model::ValidateLayout(hello->layout);
  if (!num_params.ok()) return refuse("the announced layout: " + num_params.status().message());
  if (hello->num_params != *num_params) {
    return refuse("the first worker must send the model's initial values: " +
                  std::to_string(hello->num_params) + " floats, the layout has " +
                  std::to_string(*num_params));
  }
  Result<proto::TensorView> values = proto::TensorView::Make(message->payload, *num_params);
  if (!values.ok()) return refuse("the initial values: " + values.status().message());
  if (!values->AllFinite()) return refuse("the initial values hold NaN or infinity");
  // wbsp-overlap's workers push sums of local deltas, which a buffer's
  // value is not.
  if (model::StateFloats(hello->layout) > 0 &&
      sync::ModeOf(config_.policy.name) == sync::WorkerMode::kLocalOverlap) {
    return refuse(
        "policy wbsp-overlap cannot carry module state (buffers) yet: its workers push sums of "
        "deltas; use wbsp or another policy");
  }
  params->assign(static_cast<size_t>(*num_params), 0.f);
  values->CopyTo(*params);
  layout_ = hello->layout;
  spdlog::info("{}:{} announced the external model: {} tensors, {} parameters{}", hello->host,
               hello->pid, layout_.size(), *num_params - model::StateFloats(layout_),
               model::StateFloats(layout_) > 0
                   ? fmt::format(" and {} floats of module state", model::StateFloats(layout_))
                   : std::string());
  endpoint_->AdmitSender();
  if (Status held = held_hellos_.Hold(identity, std::move(*hello), endpoint_->LastSender());
      !held.ok()) {
    spdlog::warn("cannot hold the Hello of the worker that announced the model: {}",
                 held.message());
  }
}

}  // namespace dmlps::server
