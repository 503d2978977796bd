#include "server/shard.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <utility>

#include "dmlps/base/file.h"
#include "dmlps/model/model.h"
#include "dmlps/net/endpoint.h"
#include "dmlps/optim/optimizer.h"
#include "dmlps/proto/codec.h"
#include "server/intake.h"
#include "server/listen_options.h"
#include "server/loop.h"
#include "server/model_store.h"
#include "server/shard_checkpoint.h"
#include "server/shard_listener.h"
#include "server/shard_pushes.h"
#include "server/shard_slice.h"
#include "server/shard_uplink.h"
#include "server/shard_workers.h"

namespace dmlps::server {

std::vector<int64_t> ShardBounds(int64_t num_params, int64_t shards) {
  std::vector<int64_t> bounds(static_cast<size_t>(shards) + 1);
  // Sizes num_params / shards, the first num_params % shards one more.
  const int64_t base = num_params / shards;
  const int64_t extra = num_params % shards;
  for (int64_t k = 0; k < shards; ++k) {
    bounds[static_cast<size_t>(k) + 1] =
        bounds[static_cast<size_t>(k)] + base + (k < extra ? 1 : 0);
  }
  return bounds;
}

Status WriteRawModel(const std::string& path, std::span<const float> params) {
  static_assert(std::endian::native == std::endian::little, "raw models are little-endian");
  const std::string_view bytes(reinterpret_cast<const char*>(params.data()), params.size_bytes());
  if (!WriteFileAtomically(path, bytes).ok()) {
    return Status::IOError("cannot write the model to " + path);
  }
  spdlog::info("model saved to {} ({} parameters)", path, params.size());
  return Status::Ok();
}

Status WriteEndpointFile(const std::string& path, const std::string& address) {
  if (WriteFileAtomically(path, address + '\n').ok()) return Status::Ok();
  return Status::IOError("cannot write " + path);
}

namespace {

using std::chrono::milliseconds;

// A Stage order whose push has not come for this long is skipped (the worker
// died between sending to shard 0 and to this shard): its slice is left out.
constexpr milliseconds kPushStall = kStreamStall;

// The shard's event loop: shard 0's orders carried out on the slice, in the
// order given, with the pushes they name as these come (shard.h).
class ShardServer {
 public:
  ShardServer(const ServerConfig& config, const std::atomic<int>* signal)
      : config_(config), signal_(signal), uplink_(config, name_) {}

  Result<RunReport> Run();
  // Shard 0 lost another shard and asked this one to go back to its last
  // checkpoint and register again (see shard_recovery.h).
  bool rolled_back() const { return rolled_back_; }

 private:
  Status Register();
  // Shard 0's Welcome came with this shard's slice: the optimizer, the
  // store and the limits of that slice, then the word that it is ready.
  Status TakeSlice(const proto::Welcome& welcome, InitialSlice initial);
  Status Serve();
  void HandleWorker(net::Frames& frames);
  Status HandleCoordinator(net::Frames& frames);
  void HandlePush(int64_t rank, const proto::Push& push, net::Frames& payload);
  void HandleChunk(int64_t rank, const proto::Chunk& chunk, net::Frames& payload);
  // Carries out the orders in turn, until one waits for a push not here yet.
  void RunOrders();
  // Whether an order after the first forgets worker `w` (the push the first
  // waits for will then not come).
  bool ForgottenLater(int64_t w) const;
  void Forget(int64_t w);
  // Forgets the workers whose send queue was full: they do not read their
  // replies, and the queue bound is all this shard holds for them.
  void DropUnreading();
  // Drops the unfinished push of worker `rank`: what is missing is left out.
  void Abandon(int64_t rank, const std::string& why);
  bool Interrupted() const { return signal_ != nullptr && signal_->load() != 0; }

  const ServerConfig& config_;
  const std::atomic<int>* signal_;
  const std::string name_ = "shard " + std::to_string(config_.shard_index);

  zmq::context_t context_;
  std::optional<ShardListener> listener_;
  ShardUplink uplink_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::optional<ModelStore> store_;
  std::unique_ptr<ShardCheckpoints> checkpoints_;  // --checkpoint, --resume
  int64_t begin_ = 0;                              // this slice in the flat parameter vector
  int64_t size_ = 0;

  std::optional<ShardWorkers> workers_;  // once the slice is known
  std::optional<ShardPushes> pushes_;
  std::deque<proto::Order> orders_;
  std::map<int64_t, std::string> unreading_;  // by rank: why a reply could not be queued
  Clock::time_point waiting_since_;  // when the first order began to wait; epoch: it does not

  bool stopped_ = false;
  bool draining_done_ = false;
  bool rolled_back_ = false;
  std::string stop_reason_;
  int64_t staged_ = 0;
  int64_t skipped_ = 0;
  RunReport report_;
};

Status ShardServer::Register() {
  DMLPS_ASSIGN_OR_RETURN(net::BindOptions bind_options, ReadServerKeys(config_));
  DMLPS_ASSIGN_OR_RETURN(net::ConnectOptions link_options, ReadShardLinkKeys(config_));
  DMLPS_ASSIGN_OR_RETURN(ShardListener listener,
                         ShardListener::Bind(context_, config_, std::move(bind_options)));
  listener_.emplace(std::move(listener));
  const std::string address = listener_->endpoint().address();
  if (!config_.endpoint_file.empty()) {
    DMLPS_RETURN_IF_ERROR(WriteEndpointFile(config_.endpoint_file, address));
  }
  DMLPS_RETURN_IF_ERROR(uplink_.Register(context_, link_options,
                                         config_.advertise.empty() ? address : config_.advertise));
  spdlog::info("{} of {}: listening on {}, registering with shard 0 at {}", name_,
               config_.shard_count, address, config_.coordinator);
  DMLPS_ASSIGN_OR_RETURN(std::optional<proto::Message> welcomed,
                         uplink_.AwaitWelcome([this] { return Interrupted(); }));
  if (!welcomed.has_value()) return Status::Ok();
  const auto& welcome = std::get<proto::Welcome>(welcomed->body);
  DMLPS_ASSIGN_OR_RETURN(
      InitialSlice initial,
      TakeInitialSlice(welcome, welcomed->payload, config_.shard_index, config_.shard_count));
  return TakeSlice(welcome, std::move(initial));
}

Status ShardServer::TakeSlice(const proto::Welcome& welcome, InitialSlice initial) {
  begin_ = initial.begin;
  size_ = static_cast<int64_t>(initial.values.size());
  std::vector<float> slice = std::move(initial.values);
  // The optimizer steps the parameters of the slice; the module state that
  // ends the model is averaged.
  const int64_t state_begin = initial.num_params - model::StateFloats(initial.layout);
  DMLPS_ASSIGN_OR_RETURN(
      optimizer_, optim::MakeOptimizer(welcome.optimizer, initial.layout, begin_,
                                       std::max(begin_, std::min(begin_ + size_, state_begin))));
  DMLPS_RETURN_IF_ERROR(checkpoints_->Adopt(welcome, initial.model, begin_, begin_ + size_, &slice,
                                            optimizer_.get()));
  store_.emplace(std::move(slice),
                 proto::ChunkBytesFor(size_ * static_cast<int64_t>(sizeof(float))) /
                     static_cast<int64_t>(sizeof(float)),
                 config_.threads);
  store_->set_state_begin(std::max<int64_t>(0, state_begin - begin_));
  if (welcome.optimizer.clip_norm > 0) {
    // The norm is the whole model's: this slice's sum goes to shard 0,
    // which answers with every slice's (Order kClip).
    store_->set_clip_norm(welcome.optimizer.clip_norm);
    store_->set_shared_norm([this](int64_t step, double squares) {
      const proto::Order report{proto::Order::kNorm, -1, step, squares};
      if (Status sent = uplink_.Send(proto::Orders{{report}}); !sent.ok()) {
        spdlog::warn("{}: cannot send shard 0 the norm of step {}: {}", name_, step,
                     sent.message());
      }
    });
  }
  // Before any worker learns this address from shard 0.
  DMLPS_RETURN_IF_ERROR(listener_->Fit(size_, welcome.num_workers));
  spdlog::info("{}: model {}, parameters [{}, {}) of {}, {} (policy {} on shard 0)", name_,
               initial.model, begin_, begin_ + size_, initial.num_params, optimizer_->Name(),
               welcome.policy);
  workers_.emplace(listener_->endpoint(), name_, size_, config_.shard_index, config_.shard_count,
                   [this](int64_t rank) {
                     if (pushes_->streaming(rank)) Abandon(rank, "it joined again");
                   });
  pushes_.emplace(size_);
  // Ready: shard 0 tells the workers this address only now (a connection
  // the old listener took would have closed with it).
  return uplink_.Ready();
}

void ShardServer::HandleWorker(net::Frames& frames) {
  if (frames.size() < 2) return;
  zmq::message_t identity = net::CopyFrame(frames[0]);
  const int64_t rank = workers_->RankOf(identity);
  const std::string who = SenderName(rank, "a peer");
  Result<proto::Message> message = DecodeBounded(frames, listener_->max_bytes());
  if (!message.ok()) {
    workers_->Refuse(identity, who, message.status().message(), rank < 0);
    return;
  }
  proto::Body& body = message->body;
  if (auto* hello = std::get_if<proto::Hello>(&body)) {
    // A worker shard 0 admitted, under the rank it got there.
    if (hello->rank < 0 || hello->shard >= 0) {
      workers_->Refuse(identity, who,
                       "only workers that joined shard 0 (with their rank) push here", true);
      return;
    }
    workers_->HandleHello(identity, *hello);
    return;
  }
  if (rank < 0) {
    workers_->Refuse(identity, who,
                     std::string(proto::MsgTypeName(proto::TypeOf(body))) + " before Hello", true,
                     /*rejoin=*/true);
    return;
  }
  if (auto* push = std::get_if<proto::Push>(&body)) {
    HandlePush(rank, *push, message->payload);
  } else if (auto* chunk = std::get_if<proto::Chunk>(&body)) {
    HandleChunk(rank, *chunk, message->payload);
  } else if (auto* error = std::get_if<proto::Error>(&body)) {
    spdlog::debug("{}: worker {} says: {}", name_, rank, error->message);
  } else if (!std::holds_alternative<proto::Heartbeat>(body)) {
    workers_->Refuse(identity, who,
                     "a worker may send a shard beyond 0 only its pushes, not " +
                         std::string(proto::MsgTypeName(proto::TypeOf(body))),
                     false);
  }
}

void ShardServer::HandlePush(int64_t rank, const proto::Push& push, net::Frames& payload) {
  const std::string who = "worker " + std::to_string(rank);
  if (pushes_->Full(rank)) {
    workers_->Refuse(rank, who,
                     "push " + std::to_string(push.clock) + ": more than " +
                         std::to_string(ShardPushes::kMaxUnordered) +
                         " pushes that shard 0 has not ordered; this one is dropped");
    return;
  }
  if (pushes_->streaming(rank)) Abandon(rank, "broken off by its next push");
  // A push this shard cannot take still gets its orders, and is refused.
  if (std::string refusal = pushes_->Take(rank, push, payload); !refusal.empty()) {
    workers_->Refuse(rank, who, refusal);
  }
  RunOrders();
}

void ShardServer::HandleChunk(int64_t rank, const proto::Chunk& chunk, net::Frames& payload) {
  const PushStreams::Taken taken = pushes_->TakeChunk(rank, chunk.index, payload);
  const std::string who = "worker " + std::to_string(rank);
  switch (taken.verdict) {
    case PushStreams::Verdict::kTaken:
      break;
    case PushStreams::Verdict::kNonFinite:
      workers_->Refuse(rank, who, taken.why + "; it is left out");
      break;
    case PushStreams::Verdict::kNoStream:
      workers_->Refuse(rank, who, taken.why);
      return;
    case PushStreams::Verdict::kBroken:
      Abandon(rank, taken.error.message());
      return;
  }
  store_->Advance();
}

void ShardServer::Abandon(int64_t rank, const std::string& why) {
  workers_->Refuse(rank, "a worker",
                   "push " + std::to_string(pushes_->clock(rank)) + ": " + why +
                       "; the rest of its slice is left out");
  pushes_->Close(rank);
  store_->Advance();
}

bool ShardServer::ForgottenLater(int64_t w) const {
  return std::any_of(orders_.begin() + 1, orders_.end(), [w](const proto::Order& o) {
    return o.kind == proto::Order::kForget && o.worker == w;
  });
}

void ShardServer::Forget(int64_t w) {
  // Its pushes here stay: shard 0 may still order them (--deterministic
  // stages a round's pushes at its end). A push shard 0 never got stays
  // until the rank pushes again under the same clock.
  pushes_->Forget(w);
  if (workers_->connected(w) && pushes_->Close(w)) store_->Advance();
  workers_->Forget(w);
}

void ShardServer::DropUnreading() {
  std::map<int64_t, std::string> unreading;
  unreading.swap(unreading_);
  for (const auto& [rank, why] : unreading) {
    if (!workers_->connected(rank)) continue;
    const std::string what =
        "dropped worker " + std::to_string(rank) + ": it does not read its replies (" + why + ")";
    spdlog::warn("{}: {}", name_, what);
    Forget(rank);
    (void)uplink_.Send(proto::Error{what, false});
  }
}

void ShardServer::RunOrders() {
  while (!orders_.empty()) {
    const proto::Order order = orders_.front();
    switch (order.kind) {
      case proto::Order::kStage: {
        std::shared_ptr<proto::IncomingTensor> push = pushes_->Claim(order.worker, order.clock);
        if (push == nullptr) {
          const Clock::time_point now = Clock::now();
          if (waiting_since_ == Clock::time_point{}) waiting_since_ = now;
          // A push of a worker gone will not come.
          if (!workers_->forgotten(order.worker) && !ForgottenLater(order.worker)) {
            if (now - waiting_since_ < kPushStall && !draining_done_) return;  // on its way
            spdlog::warn("{}: push {} of worker {} never came; its slice is left out", name_,
                         order.clock, order.worker);
          }
          ++skipped_;
          break;
        }
        store_->Stage(std::move(push), static_cast<float>(order.value));
        ++staged_;
        break;
      }
      case proto::Order::kDiscard:
        pushes_->Discard(order.worker, order.clock);
        break;
      case proto::Order::kApply:
        store_->Apply(optimizer_.get(), static_cast<float>(order.value));
        break;
      case proto::Order::kApplyDelta:
        store_->Apply(nullptr, static_cast<float>(order.value));
        break;
      case proto::Order::kReply: {
        if (!workers_->connected(order.worker)) {
          // Dropped here for not reading its replies, it may still be shard 0's.
          if (workers_->forgotten(order.worker)) break;
          spdlog::warn("{}: no connection from worker {} to send its slice of the model to", name_,
                       order.worker);
          break;
        }
        proto::Model header;
        header.version = static_cast<int64_t>(order.value);
        QueueModelReply(
            *store_, listener_->endpoint(), &workers_->identity(order.worker), header,
            "worker " + std::to_string(order.worker),
            [this, rank = order.worker](const Status& why) {
              unreading_.emplace(rank, why.message());
            },
            order.clock == 1);
        break;
      }
      case proto::Order::kForget:
        Forget(order.worker);
        break;
      case proto::Order::kCheckpoint:
        // The slice and its optimizer state agree once the updates are in.
        if (store_->ApplyPending()) return;
        // Shard 0 writes its own file of this version once every shard has.
        checkpoints_->Take(order, *store_, *optimizer_, [this, order] {
          if (Status sent = uplink_.Send(proto::Orders{{order}}); !sent.ok()) {
            spdlog::warn("{}: cannot tell shard 0 of checkpoint {}: {}", name_, order.clock,
                         sent.ToString());
          }
        });
        break;
      case proto::Order::kSnapshot: {
        const auto id = static_cast<int64_t>(order.value);
        store_->Snapshot([this, id](std::shared_ptr<const std::vector<float>> values) {
          net::Frames payload;
          const auto count = static_cast<int64_t>(values->size());
          if (count > 0) proto::AppendRange(std::move(values), 0, count, &payload);
          Status sent = uplink_.Send(proto::Slice{id, count}, std::move(payload));
          if (!sent.ok())
            spdlog::warn("{}: cannot send snapshot {}: {}", name_, id, sent.ToString());
        });
        break;
      }
      default:
        spdlog::warn("{}: ignoring an order of unknown kind {}", name_, order.kind);
        break;
    }
    waiting_since_ = Clock::time_point{};
    orders_.pop_front();
  }
}

Status ShardServer::HandleCoordinator(net::Frames& frames) {
  Result<proto::Message> decoded = proto::DecodeMessage(frames, 0);
  if (!decoded.ok()) return decoded.status().WithContext("bad message from shard 0");
  proto::Message& message = *decoded;
  uplink_.Heard();
  if (auto* orders = std::get_if<proto::Orders>(&message.body)) {
    for (const proto::Order& order : orders->orders) {
      // An admission waits for nothing: a worker's Hello may wait for it;
      // nor does a clipped step's norm, which a step queued waits for.
      if (order.kind == proto::Order::kAdmit) {
        workers_->Admit(order.worker, order.clock);
      } else if (order.kind == proto::Order::kClip) {
        if (store_.has_value()) store_->TakeGlobalSquares(order.clock, order.value);
      } else {
        orders_.push_back(order);
      }
    }
    RunOrders();
  } else if (auto* stop = std::get_if<proto::Stop>(&message.body)) {
    stopped_ = true;
    stop_reason_ = stop->reason;
  } else if (auto* error = std::get_if<proto::Error>(&message.body)) {
    rolled_back_ = error->fatal && error->rejoin && !config_.checkpoint.empty();
    if (error->fatal) return Status::Unavailable("shard 0 dropped this shard: " + error->message);
    spdlog::warn("shard 0 says: {}", error->message);
  }
  return Status::Ok();
}

Status ShardServer::Serve() {
  std::array<net::Endpoint*, 2> sockets{&uplink_.endpoint(), &listener_->endpoint()};
  net::Frames frames;
  while (!stopped_) {
    if (Interrupted()) {
      report_.signal = signal_->load();
      return Status::Ok();
    }
    DMLPS_ASSIGN_OR_RETURN(int ready, net::Endpoint::WaitAny(sockets, kPollSlice));
    if (ready >= 0) {
      // Orders first: they free what pushes wait on.
      while (!stopped_) {
        DMLPS_ASSIGN_OR_RETURN(bool got, uplink_.endpoint().Receive(&frames, milliseconds(0)));
        if (!got) break;
        DMLPS_RETURN_IF_ERROR(HandleCoordinator(frames));
      }
      for (int i = 0; i < 256; ++i) {
        DMLPS_ASSIGN_OR_RETURN(bool got, listener_->endpoint().Receive(&frames, milliseconds(0)));
        if (!got) break;
        HandleWorker(frames);
      }
    }
    RunOrders();
    DropUnreading();
    workers_->ExpireHeld();
    const Clock::time_point now = Clock::now();
    DMLPS_RETURN_IF_ERROR(uplink_.Tick(now));
    for (const int64_t rank : pushes_->StalledAt(now, kPushStall)) {
      Abandon(rank, "no chunk for " + std::to_string(kPushStall.count() / 1000) + " s");
    }
  }
  // The last orders may name pushes still arriving: take them, for a while.
  const Clock::time_point deadline = Clock::now() + kDrainLimit;
  while ((!orders_.empty() || store_->ApplyPending()) && Clock::now() < deadline) {
    DMLPS_ASSIGN_OR_RETURN(bool got, listener_->endpoint().Receive(&frames, kPollSlice));
    if (got) HandleWorker(frames);
    RunOrders();
  }
  draining_done_ = true;  // a stage still waiting now is skipped
  RunOrders();
  return Status::Ok();
}

Result<RunReport> ShardServer::Run() {
  DMLPS_ASSIGN_OR_RETURN(checkpoints_, ShardCheckpoints::Open(config_));
  if (Status registered = Register(); !registered.ok()) {
    // Shard 0 waits for every shard: it should know this one will not come.
    if (uplink_.connected()) (void)uplink_.Send(proto::Error{registered.message(), true});
    return registered;
  }
  if (Interrupted()) {
    report_.signal = signal_->load();
    return report_;
  }
  Status served = Serve();
  if (rolled_back_) return served;
  if (!served.ok() || report_.signal != 0) {
    // Shard 0 cannot go on without this slice: it should know at once.
    const std::string why = report_.signal != 0 ? name_ + " interrupted" : served.message();
    (void)uplink_.Send(proto::Error{why, true});
    DMLPS_RETURN_IF_ERROR(served);
    return report_;
  }
  spdlog::info("{} stopped by shard 0 ({}): {} pushes staged, {} left out", name_, stop_reason_,
               staged_, skipped_);
  if (!config_.save_model.empty()) {
    if (store_->ApplyPending()) {
      return Status::Unavailable(
          "--save-model: an update is still waiting for its gradient's "
          "chunks; the model was not saved");
    }
    DMLPS_RETURN_IF_ERROR(WriteRawModel(config_.save_model, store_->Params()));
  }
  return report_;
}

}  // namespace

Result<RunReport> RunServerShard(const ServerConfig& config, const std::atomic<int>* signal) {
  ServerConfig run = config;
  while (true) {
    ShardServer shard(run, signal);
    Result<RunReport> report = shard.Run();
    if (!shard.rolled_back()) return report;
    // Shard 0 starts over from its checkpoint: this one from its own.
    spdlog::warn("{}; shard {} starts again from {}", report.status().message(), config.shard_index,
                 config.checkpoint);
    run.resume = config.checkpoint;
  }
}

}  // namespace dmlps::server
