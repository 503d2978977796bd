#include "worker/link.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <thread>
#include <utility>

#include "dmlps/net/curve.h"
#include "dmlps/net/secret.h"
#include "dmlps/proto/digest.h"
#include "dmlps/trace/trace.h"
#include "dmlps/worker/model_receiver.h"

namespace dmlps::worker {
namespace {

constexpr int64_t kFloatBytes = sizeof(float);

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string Seconds(milliseconds d) { return fmt::format("{:g}", d.count() / 1000.0); }

}  // namespace

ServerLink::ServerLink(const WorkerConfig& config, const std::atomic<int>* signal)
    : config_(config), signal_(signal), socket_(config.link.heartbeat) {}

Status Introduction::LoadKeys(const LinkSpec& link) {
  if (const std::string path = net::SecretFilePath(link.secret_file); !path.empty()) {
    DMLPS_ASSIGN_OR_RETURN(secret_, net::ReadSecretFile(path));
  }
  if (link.curve_secret.empty()) return Status::Ok();
  DMLPS_ASSIGN_OR_RETURN(net::CurveKeyPair pair, net::ReadSecretKeyFile(link.curve_secret));
  DMLPS_ASSIGN_OR_RETURN(connect_options_.curve_server_key,
                         net::ReadPublicKey(link.curve_server_key));
  connect_options_.curve_secret = pair.secret_key;
  return Status::Ok();
}

proto::Hello Introduction::HelloFor(bool to_server, int64_t rank, int64_t threads,
                                    int64_t max_batch, int64_t ticket, net::Frames* payload) const {
  proto::Hello hello{
      rank, net::HostName(), static_cast<int64_t>(getpid()), threads, max_batch, -1, 0, {}};
  hello.evaluator = evaluator_;
  hello.ticket = ticket;
  hello.secret = secret_;
  if (!to_server || layout_.empty()) return hello;
  // An external model: the server takes the first worker's values.
  hello.layout = layout_;
  if (values_ != nullptr && !values_->empty()) {
    hello.num_params = static_cast<int64_t>(values_->size());
    proto::AppendTensor(values_, proto::ChunkBytesFor(hello.num_params * kFloatBytes), payload);
  }
  return hello;
}

Status ServerLink::SayHello(size_t shard, int64_t rank, int64_t max_batch, int64_t ticket) {
  net::Frames payload;
  const proto::Hello hello =
      introduction_.HelloFor(shard == 0, rank, config_.threads, max_batch, ticket, &payload);
  if (shard > 0) return shards_[shard - 1].SendMessage(nullptr, hello);
  return socket_.Send(hello, std::move(payload));
}

Status ServerLink::SendEvaluation(const proto::Evaluation& evaluation) {
  return socket_.Send(evaluation);
}

Status ServerLink::Join(int64_t max_batch) {
  max_batch_ = max_batch;
  DMLPS_ASSIGN_OR_RETURN(
      net::Endpoint endpoint,
      net::Endpoint::Connect(context_, config_.link.server, introduction_.connect_options()));
  socket_.Open(std::move(endpoint));
  DMLPS_RETURN_IF_ERROR(SayHello(0, config_.rank, max_batch_));
  Result<proto::Message> reply = Await(0, {proto::MsgType::kWelcome}, config_.link.connect_timeout);
  if (!reply.ok()) {
    if (Interrupted()) return reply.status();
    if (reply.status().code() == StatusCode::kUnavailable &&
        reply.status().message().starts_with("no answer")) {
      return Status::Unavailable("no server answered at " + config_.link.server + " within " +
                                 Seconds(config_.link.connect_timeout) + " s");
    }
    return reply.status();
  }
  if (stop_) {
    return Status::Unavailable("the server stopped before this worker joined: " + stop_reason_);
  }
  welcome_ = std::get<proto::Welcome>(reply->body);
  rank_ = welcome_.rank;
  DMLPS_RETURN_IF_ERROR(codecs_.Take(welcome_));
  return ConnectShards();
}

Status ServerLink::ConnectShards() {
  shards_.clear();
  const std::vector<int64_t>& bounds = welcome_.bounds;
  if (bounds.empty() && welcome_.servers.empty()) return Status::Ok();
  bool valid = bounds.size() == welcome_.servers.size() + 1 && bounds.size() >= 2 &&
               bounds.front() == 0 && bounds.back() == welcome_.num_params;
  for (size_t k = 1; valid && k < bounds.size(); ++k) valid = bounds[k] > bounds[k - 1];
  if (!valid) return Status::Protocol("the server sent server shards that do not fit its model");
  if (welcome_.servers.size() == 1) return Status::Ok();
  if (shard_context_ == nullptr) {
    // I/O threads of their own, so the slices go out and come in in parallel.
    shard_context_ = std::make_unique<zmq::context_t>(
        static_cast<int>(std::min<size_t>(welcome_.servers.size() - 1, 4)));
  }
  for (size_t k = 1; k < welcome_.servers.size(); ++k) {
    DMLPS_ASSIGN_OR_RETURN(net::Endpoint shard,
                           net::Endpoint::Connect(*shard_context_, welcome_.servers[k],
                                                  introduction_.connect_options()));
    shards_.push_back(std::move(shard));
    DMLPS_RETURN_IF_ERROR(SayHello(k, welcome_.rank, max_batch_, welcome_.ticket));
  }
  // Every shard must know this worker before shard 0 may send it work.
  for (size_t k = 1; k < welcome_.servers.size(); ++k) {
    Result<proto::Message> reply =
        Await(k, {proto::MsgType::kWelcome}, config_.link.connect_timeout);
    if (!reply.ok()) {
      return reply.status().WithContext("server shard " + std::to_string(k) + " at " +
                                        welcome_.servers[k]);
    }
    if (stop_) return Status::Ok();
    const auto& welcome = std::get<proto::Welcome>(reply->body);
    if (welcome.num_params != bounds[k + 1] - bounds[k]) {
      return Status::Protocol("server shard " + std::to_string(k) + " holds " +
                              std::to_string(welcome.num_params) + " parameters, not " +
                              std::to_string(bounds[k + 1] - bounds[k]));
    }
  }
  spdlog::info("connected to {} server shards", welcome_.servers.size());
  return Status::Ok();
}

Result<bool> ServerLink::Rejoin() {
  const Clock::time_point deadline = Clock::now() + config_.reconnect_timeout;
  milliseconds backoff{250};
  int64_t want_rank = welcome_.rank;
  const proto::Welcome before = welcome_;
  while (true) {
    if (Interrupted()) return Status::Unavailable("interrupted");
    const Clock::time_point now = Clock::now();
    if (now >= deadline) {
      // Nobody will read the Hellos still queued: exit without lingering.
      socket_.DiscardUnsent();
      gave_up_ = true;
      return Status::Unavailable("the server at " + config_.link.server +
                                 " did not come back within " + Seconds(config_.reconnect_timeout) +
                                 " s (--reconnect-timeout)");
    }
    // A fresh socket: the server that comes back knows nothing of the old one.
    socket_.Close();
    // With the keys Join used: a CURVE server accepts nothing else.
    DMLPS_ASSIGN_OR_RETURN(
        net::Endpoint endpoint,
        net::Endpoint::Connect(context_, config_.link.server, introduction_.connect_options()));
    socket_.Open(std::move(endpoint));
    server_lost_ = false;
    refused_ = false;
    stop_ = false;
    // The batch Join offered (--max-batch auto worked it out), not the flag's.
    DMLPS_RETURN_IF_ERROR(SayHello(0, want_rank, max_batch_));
    const auto wait = std::min(
        backoff, std::chrono::duration_cast<milliseconds>(deadline - now) + milliseconds(1));
    Result<proto::Message> reply = Await(0, {proto::MsgType::kWelcome}, wait);
    if (reply.ok() && stop_) return false;  // the run ended meanwhile
    if (reply.ok()) {
      const auto& welcome = std::get<proto::Welcome>(reply->body);
      if (welcome.model != before.model || welcome.num_params != before.num_params ||
          welcome.mode != before.mode || welcome.input_dim != before.input_dim ||
          welcome.classes != before.classes) {
        return Status::Config("the server came back with another job (model " + welcome.model +
                              ", " + welcome.mode + " steps)");
      }
      welcome_ = welcome;
      rank_ = welcome_.rank;
      ++reconnects_;
      // The new server's first model is whole again.
      DMLPS_RETURN_IF_ERROR(codecs_.Take(welcome_));
      DMLPS_RETURN_IF_ERROR(ConnectShards());
      sync_round_ = -1;
      return welcome.shard_index != before.shard_index ||
             welcome.shard_count != before.shard_count || welcome.rank != before.rank;
    }
    if (refused_) want_rank = -1;  // e.g. its rank is taken: any will do
    spdlog::debug("no server yet: {}", reply.status().message());
    // Await waited `wait` already when nothing came; a refusal comes back at once.
    if (refused_) std::this_thread::sleep_for(std::min(backoff, milliseconds(1000)));
    backoff = std::min(backoff * 2, milliseconds(4000));
  }
}

void ServerLink::Leave(const std::string& why) {
  if (!socket_.is_open() || gave_up_) return;
  (void)socket_.Send(proto::Error{why, true});
}

Status ServerLink::SendPull(int64_t clock) { return socket_.Send(proto::Pull{clock}); }

int64_t ServerLink::PushWireBytes(size_t floats) const { return codecs_.PushBytes(floats); }

Status ServerLink::SendPush(proto::Push push, std::shared_ptr<const std::vector<float>> payload,
                            const proto::Body* then) {
  if (codecs_.encodes_pushes()) {
    // Encoded: inline, one frame (docs/compression.md).
    net::Frames frames;
    codecs_.EncodePush(*payload, &push, &frames);
    DMLPS_RETURN_IF_ERROR(socket_.Send(push, std::move(frames)));
    return then != nullptr ? socket_.Send(*then) : Status::Ok();
  }
  // Larger than a chunk: streamed, so the server sums the first chunks while
  // the later ones are on the wire.
  if (shards_.empty()) {
    push.num_params = welcome_.num_params;
    const auto size = static_cast<int64_t>(payload->size());
    return socket_.SendWithPayload(push, std::move(payload), 0, size,
                                   proto::ChunkBytesFor(push.num_params * kFloatBytes), then);
  }
  // Each shard its slice, the others first: shard 0's orders for this push
  // then find it there. ZeroMQ's I/O threads send them in parallel.
  for (size_t k = 1; k <= shards_.size(); ++k) {
    proto::Push slice = push;
    slice.num_params = Bound(k + 1) - Bound(k);
    DMLPS_RETURN_IF_ERROR(
        shards_[k - 1].SendWithPayload(nullptr, slice, payload, Bound(k), slice.num_params,
                                       proto::ChunkBytesFor(slice.num_params * kFloatBytes)));
  }
  push.num_params = Bound(1);
  return socket_.SendWithPayload(push, std::move(payload), 0, Bound(1),
                                 proto::ChunkBytesFor(Bound(1) * kFloatBytes), then);
}

Status ServerLink::HandleAside(const proto::Message& message) {
  const proto::MsgType type = proto::TypeOf(message.body);
  if (auto* error = std::get_if<proto::Error>(&message.body)) {
    if (error->fatal && error->rejoin && rank_ >= 0) {
      // A server that restarted, or one that declared this worker lost.
      server_lost_ = true;
      return Status::Unavailable("the server no longer knows this worker: " + error->message);
    }
    if (error->fatal) {
      refused_ = true;
      return Status::Refused("the server refused this worker: " + error->message);
    }
    spdlog::warn("the server says: {}", error->message);
  } else if (auto* sync = std::get_if<proto::SyncNow>(&message.body)) {
    sync_round_ = std::max(sync_round_, sync->round);
  } else if (auto* stop = std::get_if<proto::Stop>(&message.body)) {
    stop_ = true;
    stop_reason_ = stop->reason;
  } else if (type != proto::MsgType::kHeartbeat) {
    spdlog::warn("ignoring an unexpected {} from the server", proto::MsgTypeName(type));
  }
  return Status::Ok();
}

Result<proto::Message> ServerLink::Await(std::initializer_list<proto::MsgType> wants) {
  return Await(0, wants, config_.link.server_timeout);
}

Result<proto::Message> ServerLink::Await(size_t shard, std::initializer_list<proto::MsgType> wants,
                                         milliseconds silence) {
  Clock::time_point deadline = Clock::now() + silence;
  net::Frames frames;
  while (true) {
    if (Interrupted()) return Status::Unavailable("interrupted");
    if (Clock::now() >= deadline) {
      server_lost_ = true;
      const std::string who =
          shard == 0 ? "the server at " + config_.link.server
                     : "server shard " + std::to_string(shard) + " at " + welcome_.servers[shard];
      return Status::Unavailable("no answer from " + who + " for " + Seconds(silence) + " s");
    }
    socket_.MaybeHeartbeat();
    if (shard > 0) {
      // Awaiting another server shard: shard 0 may stop the run meanwhile
      // (one shard lost, say), or fail this worker.
      DMLPS_RETURN_IF_ERROR(PollControl());
      if (stop_) return proto::Message{proto::Stop{stop_reason_}, {}};
    }
    Result<bool> got = Receive(shard, &frames, kPollSlice);
    if (!got.ok()) return got.status();
    if (!*got) continue;
    deadline = Clock::now() + silence;
    Result<proto::Message> message = proto::DecodeMessage(frames, 0);
    if (!message.ok()) return message.status().WithContext("bad message from the server");
    const proto::MsgType type = proto::TypeOf(message->body);
    if (std::find(wants.begin(), wants.end(), type) != wants.end() ||
        type == proto::MsgType::kStop) {
      if (auto* stop = std::get_if<proto::Stop>(&message->body)) {
        stop_ = true;
        stop_reason_ = stop->reason;
      }
      return message;
    }
    DMLPS_RETURN_IF_ERROR(HandleAside(*message));
  }
}

Result<bool> ServerLink::Receive(size_t shard, net::Frames* frames, milliseconds timeout) {
  if (shard == 0) return socket_.Receive(frames, timeout);
  return shards_[shard - 1].Receive(frames, timeout);
}

Status ServerLink::PollControl() {
  socket_.MaybeHeartbeat();
  net::Frames frames;
  while (true) {
    DMLPS_ASSIGN_OR_RETURN(bool got, socket_.Receive(&frames, milliseconds(0)));
    if (!got) return Status::Ok();
    Result<proto::Message> message = proto::DecodeMessage(frames, 0);
    if (!message.ok()) return message.status().WithContext("bad message from the server");
    DMLPS_RETURN_IF_ERROR(HandleAside(*message));
  }
}

Status ServerLink::Pause(std::chrono::microseconds d) {
  const Clock::time_point until = Clock::now() + d;
  while (Clock::now() < until) {
    if (Interrupted()) return Status::Unavailable("interrupted");
    socket_.MaybeHeartbeat();
    std::this_thread::sleep_for(std::min<Clock::duration>(until - Clock::now(), kPollSlice));
  }
  return Status::Ok();
}

int64_t ServerLink::Bound(size_t k) const {
  return welcome_.bounds.empty() ? (k == 0 ? 0 : welcome_.num_params) : welcome_.bounds[k];
}

Result<uint64_t> ServerLink::TakeSlice(size_t shard, proto::Message& message,
                                       std::span<float> out) {
  const auto& header = std::get<proto::Model>(message.body);
  if (header.num_params != static_cast<int64_t>(out.size())) {
    return Status::Protocol("the server sent a model of " + std::to_string(header.num_params) +
                            " parameters, expected " + std::to_string(out.size()));
  }
  uint64_t digest = header.digest;
  DMLPS_ASSIGN_OR_RETURN(ModelReceiver model, ModelReceiver::Open(message, out));
  // A streamed model: each chunk is copied in as it arrives.
  while (!model.complete()) {
    DMLPS_ASSIGN_OR_RETURN(proto::Message piece,
                           Await(shard, {proto::MsgType::kChunk}, config_.link.server_timeout));
    if (stop_) return uint64_t{0};
    if (const uint64_t d = std::get<proto::Chunk>(piece.body).digest; d != 0) digest = d;
    DMLPS_RETURN_IF_ERROR(model.Take(piece).WithContext("bad model from the server"));
  }
  if (digest == 0) return digest;
  proto::ModelDigest received;
  received.Add(out);
  if (received.value() != digest) {
    return Status::DataLoss(fmt::format(
        "the model received differs from the one the server sent (digest {:016x}, the server's "
        "{:016x})",
        received.value(), digest));
  }
  return digest;
}

Result<proto::Model> ServerLink::TakeModel(proto::Message& message, std::span<float> params) {
  const proto::Model header = std::get<proto::Model>(message.body);
  if (header.encoded_bytes != 0) {
    DMLPS_RETURN_IF_ERROR(codecs_.TakeChange(message, params));
    return header;
  }
  std::vector<uint64_t> digests;
  DMLPS_ASSIGN_OR_RETURN(const uint64_t first, TakeSlice(0, message, params.subspan(0, Bound(1))));
  digests.push_back(first);
  // Sharded: the other slices come from their shards, sent as shard 0 sent
  // this one.
  for (size_t k = 1; k <= shards_.size() && !stop_; ++k) {
    DMLPS_ASSIGN_OR_RETURN(proto::Message slice,
                           Await(k, {proto::MsgType::kModel}, config_.link.server_timeout));
    if (stop_) return header;
    const auto version = std::get<proto::Model>(slice.body).version;
    if (version != header.version) {
      return Status::Protocol("server shard " + std::to_string(k) + " sent version " +
                              std::to_string(version) + " of its slice, shard 0 version " +
                              std::to_string(header.version));
    }
    DMLPS_ASSIGN_OR_RETURN(const uint64_t d,
                           TakeSlice(k, slice,
                                     params.subspan(static_cast<size_t>(Bound(k)),
                                                    static_cast<size_t>(Bound(k + 1) - Bound(k)))));
    digests.push_back(d);
  }
  if (!stop_ && std::ranges::any_of(digests, [](uint64_t d) { return d != 0; })) {
    spdlog::info("version {} of the model came whole: {} {:016x} {} the server's", header.version,
                 digests.size() == 1 ? "digest" : "digests", fmt::join(digests, " "),
                 digests.size() == 1 ? "equals" : "equal");
  }
  if (!stop_) codecs_.Hold(params);
  return header;
}

}  // namespace dmlps::worker
