#include "server/shard.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "dmlps/base/file.h"
#include "dmlps/model/model.h"
#include "dmlps/net/endpoint.h"
#include "dmlps/net/secret.h"
#include "dmlps/optim/optimizer.h"
#include "dmlps/proto/codec.h"
#include "dmlps/trace/trace.h"
#include "server/intake.h"
#include "server/listen_options.h"
#include "server/loop.h"
#include "server/model_store.h"
#include "server/shard_checkpoint.h"
#include "server/shard_slice.h"

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
// A worker's Hello waits this long for shard 0's word that it admitted
// that worker (its Order kAdmit may come after the Hello)...
constexpr milliseconds kHelloWait{10000};
// ... and so many Hellos at most wait at once; beyond, the oldest is refused.
constexpr size_t kMaxHeldHellos = 256;
// Pushes of one worker that shard 0 has not ordered yet, at most: a worker
// waits for its reply before its next push, so more is a peer gone rogue.
constexpr int64_t kMaxUnorderedPushes = 16;

std::string Key(const zmq::message_t& identity) { return IdentityKey(identity); }

// A worker as this shard knows it: where to send its slice of the model.
struct Pusher {
  zmq::message_t identity;
};

class ShardServer {
 public:
  ShardServer(const ServerConfig& config, const std::atomic<int>* signal)
      : config_(config), signal_(signal) {}

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
  // A worker's Hello: welcomed when its ticket is the one shard 0 gave it,
  // else held until shard 0 says (Admit) or kHelloWait passes.
  void HandleHello(const zmq::message_t& identity, const proto::Hello& hello);
  void Join(const zmq::message_t& identity, const proto::Hello& hello);
  // Shard 0 admitted worker `rank` with `ticket`: the Hellos held for it
  // are welcomed or refused.
  void Admit(int64_t rank, int64_t ticket);
  // Refuses the Hellos held longer than kHelloWait.
  void ExpireHeld();
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
  void Refuse(const zmq::message_t& identity, const std::string& who, const std::string& why,
              bool fatal, bool rejoin = false);
  // Drops the unfinished push of worker `rank`: what is missing is left out.
  void Abandon(int64_t rank, const std::string& why);
  bool Interrupted() const { return signal_ != nullptr && signal_->load() != 0; }

  const ServerConfig& config_;
  const std::atomic<int>* signal_;
  const std::string name_ = "shard " + std::to_string(config_.shard_index);

  zmq::context_t context_;
  std::optional<net::Endpoint> workers_;      // the ROUTER workers push to
  std::optional<net::Endpoint> coordinator_;  // the DEALER to shard 0
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::optional<ModelStore> store_;
  std::unique_ptr<ShardCheckpoints> checkpoints_;  // --checkpoint, --resume
  int64_t begin_ = 0;                              // this slice in the flat parameter vector
  int64_t size_ = 0;
  int64_t max_bytes_ = 0;  // the most a worker's message may carry

  std::map<int64_t, Pusher> pushers_;   // by rank
  std::map<int64_t, int64_t> tickets_;  // by rank: its admission's ticket (Order kAdmit)
  struct HeldHello {
    zmq::message_t identity;
    proto::Hello hello;
    Clock::time_point since;
  };
  std::deque<HeldHello> held_;                  // Hellos whose ticket shard 0 has not confirmed yet
  PushStreams streams_;                         // the pushes whose chunks are coming, by rank
  std::map<std::string, int64_t> rank_of_;      // identity bytes -> rank
  using PushKey = std::pair<int64_t, int64_t>;  // rank, the worker's clock
  std::map<PushKey, std::shared_ptr<proto::IncomingTensor>> pushes_;  // not ordered yet
  std::set<PushKey> discarded_;  // discarded before they arrived
  std::set<int64_t> forgotten_;  // ranks lost, not joined again
  std::deque<proto::Order> orders_;
  std::map<int64_t, std::string> unreading_;  // by rank: why a reply could not be queued
  Clock::time_point waiting_since_;  // when the first order began to wait; epoch: it does not

  Clock::time_point coordinator_seen_;
  Clock::time_point last_heartbeat_;
  bool stopped_ = false;
  bool draining_done_ = false;
  bool rolled_back_ = false;
  std::string stop_reason_;
  int64_t staged_ = 0;
  int64_t skipped_ = 0;
  int64_t refusals_ = 0;
  RunReport report_;
};

void ShardServer::Refuse(const zmq::message_t& identity, const std::string& who,
                         const std::string& why, bool fatal, bool rejoin) {
  if (++refusals_ <= kLoudRefusals) {
    spdlog::warn("{}: refused {}: {}", name_, who, why);
  } else {
    spdlog::debug("{}: refused {}: {}", name_, who, why);
  }
  Status sent = workers_->SendMessage(&identity, proto::Error{why, fatal, rejoin});
  if (!sent.ok()) spdlog::debug("cannot tell {}: {}", who, sent.ToString());
}

Status ShardServer::Register() {
  DMLPS_ASSIGN_OR_RETURN(net::BindOptions bind_options, ReadServerKeys(config_));
  DMLPS_ASSIGN_OR_RETURN(net::ConnectOptions link_options, ReadShardLinkKeys(config_));
  if (config_.max_message_bytes > 0) bind_options.max_frame_bytes = config_.max_message_bytes;
  bind_options.max_connections = config_.max_connections;
  // The slice's size is not known yet: the unread bound follows the frame
  // limit (the default one, or --max-message-bytes), as on shard 0.
  bind_options.max_unread_bytes = 4 * bind_options.max_frame_bytes + kUnreadHeadroom;
  DMLPS_ASSIGN_OR_RETURN(net::Endpoint workers,
                         net::Endpoint::Bind(context_, config_.bind, bind_options));
  workers_.emplace(std::move(workers));
  if (!config_.endpoint_file.empty()) {
    DMLPS_RETURN_IF_ERROR(WriteEndpointFile(config_.endpoint_file, workers_->address()));
  }
  DMLPS_ASSIGN_OR_RETURN(net::Endpoint coordinator,
                         net::Endpoint::Connect(context_, config_.coordinator, link_options));
  coordinator_.emplace(std::move(coordinator));
  proto::Hello hello;
  if (!config_.secret_file.empty()) {
    // Without CURVE, shard 0 admits a shard that presents it.
    DMLPS_ASSIGN_OR_RETURN(hello.secret, net::ReadSecretFile(config_.secret_file));
  }
  hello.host = net::HostName();
  hello.pid = getpid();
  hello.shard = config_.shard_index;
  hello.shards = config_.shard_count;
  hello.address = config_.advertise.empty() ? workers_->address() : config_.advertise;
  DMLPS_RETURN_IF_ERROR(coordinator_->SendMessage(nullptr, hello));
  spdlog::info("{} of {}: listening on {}, registering with shard 0 at {}", name_,
               config_.shard_count, workers_->address(), config_.coordinator);

  // Shard 0 answers once its data is loaded: as long as a worker may wait.
  const Clock::time_point deadline = Clock::now() + config_.worker_timeout;
  net::Frames frames;
  while (true) {
    if (Interrupted()) return Status::Ok();
    if (Clock::now() >= deadline) {
      return Status::Unavailable(
          "no answer from shard 0 at " + config_.coordinator + " for " +
          fmt::format("{:g}", std::chrono::duration<double>(config_.worker_timeout).count()) +
          " s");
    }
    DMLPS_ASSIGN_OR_RETURN(bool got, coordinator_->Receive(&frames, kPollSlice));
    if (!got) continue;
    DMLPS_ASSIGN_OR_RETURN(proto::Message message, proto::DecodeMessage(frames, 0));
    if (auto* error = std::get_if<proto::Error>(&message.body)) {
      if (error->fatal) return Status::Unavailable("shard 0 refused this shard: " + error->message);
      spdlog::warn("shard 0 says: {}", error->message);
      continue;
    }
    if (auto* stop = std::get_if<proto::Stop>(&message.body)) {
      return Status::Unavailable("shard 0 stopped before this shard joined: " + stop->reason);
    }
    auto* welcome = std::get_if<proto::Welcome>(&message.body);
    if (welcome == nullptr) continue;  // heartbeats

    DMLPS_ASSIGN_OR_RETURN(
        InitialSlice initial,
        TakeInitialSlice(*welcome, message.payload, config_.shard_index, config_.shard_count));
    return TakeSlice(*welcome, std::move(initial));
  }
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
      if (Status sent = coordinator_->SendMessage(nullptr, proto::Orders{{report}}); !sent.ok()) {
        spdlog::warn("{}: cannot send shard 0 the norm of step {}: {}", name_, step,
                     sent.message());
      }
    });
  }
  max_bytes_ = config_.max_message_bytes > 0
                   ? config_.max_message_bytes
                   : size_ * static_cast<int64_t>(sizeof(float)) + kMessageHeadroom;
  // The connection limits shard 0 has, now that the slice and the
  // workers are known (messages over max_bytes_ are refused as they come).
  DMLPS_RETURN_IF_ERROR(workers_->SetConnectionLimits(
      config_.max_connections > 0 ? config_.max_connections
                                  : welcome.num_workers + kConnectionHeadroom,
      4 * max_bytes_ + kUnreadHeadroom));
  // And its frame limit and send queue, which ZeroMQ takes at bind time:
  // bound again, before any worker learns this address from shard 0.
  DMLPS_RETURN_IF_ERROR(
      workers_->Rebind(max_bytes_, MaxQueuedMessages(size_ * static_cast<int64_t>(sizeof(float)))));
  spdlog::info("{}: model {}, parameters [{}, {}) of {}, {} (policy {} on shard 0)", name_,
               initial.model, begin_, begin_ + size_, initial.num_params, optimizer_->Name(),
               welcome.policy);
  // Ready: shard 0 tells the workers this address only now (a connection
  // the old listener took would have closed with it).
  DMLPS_RETURN_IF_ERROR(coordinator_->SendMessage(nullptr, proto::Heartbeat{trace::NowMicros()}));
  coordinator_seen_ = Clock::now();
  return Status::Ok();
}

void ShardServer::HandleWorker(net::Frames& frames) {
  if (frames.size() < 2) return;
  zmq::message_t identity = net::CopyFrame(frames[0]);
  auto it = rank_of_.find(Key(identity));
  const int64_t rank = it == rank_of_.end() ? -1 : it->second;
  const std::string who = SenderName(rank, "a peer");
  Result<proto::Message> message = DecodeBounded(frames, max_bytes_);
  if (!message.ok()) {
    Refuse(identity, who, message.status().message(), rank < 0);
    return;
  }
  proto::Body& body = message->body;
  if (auto* hello = std::get_if<proto::Hello>(&body)) {
    // A worker shard 0 admitted, under the rank it got there.
    if (hello->rank < 0 || hello->shard >= 0) {
      Refuse(identity, who, "only workers that joined shard 0 (with their rank) push here", true);
      return;
    }
    HandleHello(identity, *hello);
    return;
  }
  if (rank < 0) {
    Refuse(identity, who, std::string(proto::MsgTypeName(proto::TypeOf(body))) + " before Hello",
           true, /*rejoin=*/true);
    return;
  }
  if (auto* push = std::get_if<proto::Push>(&body)) {
    HandlePush(rank, *push, message->payload);
  } else if (auto* chunk = std::get_if<proto::Chunk>(&body)) {
    HandleChunk(rank, *chunk, message->payload);
  } else if (auto* error = std::get_if<proto::Error>(&body)) {
    spdlog::debug("{}: worker {} says: {}", name_, rank, error->message);
  } else if (!std::holds_alternative<proto::Heartbeat>(body)) {
    Refuse(identity, who,
           "a worker may send a shard beyond 0 only its pushes, not " +
               std::string(proto::MsgTypeName(proto::TypeOf(body))),
           false);
  }
}

void ShardServer::HandleHello(const zmq::message_t& identity, const proto::Hello& hello) {
  auto known = tickets_.find(hello.rank);
  if (known != tickets_.end() && hello.ticket != 0 && known->second == hello.ticket) {
    workers_->AdmitSender();
    Join(identity, hello);
    return;
  }
  // Shard 0's word may still be on its way (or a newer admission's).
  if (held_.size() >= kMaxHeldHellos) {
    Refuse(held_.front().identity, "a peer", "too many workers waiting to join; try again", true);
    held_.pop_front();
  }
  held_.push_back({net::CopyFrame(identity), hello, Clock::now()});
}

void ShardServer::Admit(int64_t rank, int64_t ticket) {
  tickets_[rank] = ticket;
  std::vector<HeldHello> ready;
  std::erase_if(held_, [&](HeldHello& held) {
    if (held.hello.rank != rank) return false;
    ready.push_back(std::move(held));
    return true;
  });
  for (HeldHello& held : ready) {
    if (held.hello.ticket != 0 && held.hello.ticket == ticket) {
      Join(held.identity, held.hello);
    } else {
      Refuse(held.identity, "a peer claiming rank " + std::to_string(rank),
             "shard 0 did not admit it as worker " + std::to_string(rank), true);
    }
  }
}

void ShardServer::ExpireHeld() {
  const Clock::time_point now = Clock::now();
  while (!held_.empty() && now - held_.front().since >= kHelloWait) {
    const HeldHello& held = held_.front();
    Refuse(held.identity, "a peer claiming rank " + std::to_string(held.hello.rank),
           "shard 0 has not admitted it as worker " + std::to_string(held.hello.rank), true);
    held_.pop_front();
  }
}

void ShardServer::Join(const zmq::message_t& identity, const proto::Hello& hello) {
  if (auto old = pushers_.find(hello.rank); old != pushers_.end()) {
    // The same rank from a new socket: a worker that joined again.
    rank_of_.erase(Key(old->second.identity));
    if (streams_.open(hello.rank)) Abandon(hello.rank, "it joined again");
  }
  pushers_[hello.rank].identity = net::CopyFrame(identity);
  forgotten_.erase(hello.rank);
  rank_of_[Key(identity)] = hello.rank;
  proto::Welcome welcome;
  welcome.rank = hello.rank;
  welcome.num_params = size_;
  welcome.shard_index = config_.shard_index;
  welcome.shard_count = config_.shard_count;
  if (Status sent = workers_->SendMessage(&identity, welcome); !sent.ok()) {
    spdlog::warn("{}: cannot welcome worker {}: {}", name_, hello.rank, sent.ToString());
  }
  spdlog::debug("{}: worker {} ({}:{}) connected", name_, hello.rank, hello.host, hello.pid);
}

void ShardServer::HandlePush(int64_t rank, const proto::Push& push, net::Frames& payload) {
  const std::string who = "worker " + std::to_string(rank);
  // Pushes wait here only for shard 0's orders; a worker far ahead of them
  // would make this shard hold them all.
  const auto first = pushes_.lower_bound({rank, INT64_MIN});
  const auto last = pushes_.lower_bound({rank + 1, INT64_MIN});
  if (std::distance(first, last) >= kMaxUnorderedPushes) {
    Refuse(pushers_[rank].identity, who,
           "push " + std::to_string(push.clock) + ": more than " +
               std::to_string(kMaxUnorderedPushes) +
               " pushes that shard 0 has not ordered; this one is dropped",
           false);
    return;
  }
  if (streams_.open(rank)) Abandon(rank, "broken off by its next push");
  OpenedPush opened = OpenPush(push, size_, "this shard's slice", payload);
  std::shared_ptr<proto::IncomingTensor> tensor = std::move(opened.tensor);
  if (opened.fault == OpenedPush::kSize || opened.fault == OpenedPush::kLayout) {
    // A push this shard cannot take still gets its orders: as one that
    // carries nothing, so that the orders naming it go on.
    tensor = std::make_shared<proto::IncomingTensor>(
        std::move(proto::IncomingTensor::Open(size_, 1, std::max<int64_t>(size_, 1), {})).value());
    tensor->Close();
    Refuse(pushers_[rank].identity, who, opened.why + "; this slice of it is left out", false);
  } else if (opened.fault == OpenedPush::kNonFinite) {
    tensor->Exclude(0, tensor->size());
    Refuse(pushers_[rank].identity, who,
           "gradient slice contains NaN or infinite values; this slice of it is left out", false);
  }
  streams_.Follow(rank, tensor, push.clock);
  const PushKey key{rank, push.clock};
  if (discarded_.erase(key) == 0) pushes_[key] = std::move(tensor);
  RunOrders();
}

void ShardServer::HandleChunk(int64_t rank, const proto::Chunk& chunk, net::Frames& payload) {
  const PushStreams::Taken taken = streams_.Take(rank, chunk.index, payload);
  const std::string who = "worker " + std::to_string(rank);
  switch (taken.verdict) {
    case PushStreams::Verdict::kTaken:
      break;
    case PushStreams::Verdict::kNonFinite:
      Refuse(pushers_[rank].identity, who, taken.why + "; it is left out", false);
      break;
    case PushStreams::Verdict::kNoStream:
      Refuse(pushers_[rank].identity, who, taken.why, false);
      return;
    case PushStreams::Verdict::kBroken:
      Abandon(rank, taken.error.message());
      return;
  }
  store_->Advance();
}

void ShardServer::Abandon(int64_t rank, const std::string& why) {
  Refuse(pushers_[rank].identity, "a worker",
         "push " + std::to_string(streams_.clock(rank)) + ": " + why +
             "; the rest of its slice is left out",
         false);
  streams_.Close(rank);
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
  forgotten_.insert(w);
  std::erase_if(discarded_, [w](const PushKey& key) { return key.first == w; });
  if (auto it = pushers_.find(w); it != pushers_.end()) {
    if (streams_.Close(w)) store_->Advance();
    rank_of_.erase(Key(it->second.identity));
    pushers_.erase(it);
  }
}

void ShardServer::DropUnreading() {
  std::map<int64_t, std::string> unreading;
  unreading.swap(unreading_);
  for (const auto& [rank, why] : unreading) {
    if (!pushers_.contains(rank)) continue;
    const std::string what =
        "dropped worker " + std::to_string(rank) + ": it does not read its replies (" + why + ")";
    spdlog::warn("{}: {}", name_, what);
    Forget(rank);
    (void)coordinator_->SendMessage(nullptr, proto::Error{what, false});
  }
}

void ShardServer::RunOrders() {
  while (!orders_.empty()) {
    const proto::Order order = orders_.front();
    switch (order.kind) {
      case proto::Order::kStage: {
        auto it = pushes_.find({order.worker, order.clock});
        if (it == pushes_.end()) {
          const Clock::time_point now = Clock::now();
          if (waiting_since_ == Clock::time_point{}) waiting_since_ = now;
          // A push of a worker gone will not come.
          if (!forgotten_.contains(order.worker) && !ForgottenLater(order.worker)) {
            if (now - waiting_since_ < kPushStall && !draining_done_) return;  // on its way
            spdlog::warn("{}: push {} of worker {} never came; its slice is left out", name_,
                         order.clock, order.worker);
          }
          ++skipped_;
          break;
        }
        store_->Stage(it->second, static_cast<float>(order.value));
        pushes_.erase(it);
        ++staged_;
        break;
      }
      case proto::Order::kDiscard:
        if (pushes_.erase({order.worker, order.clock}) == 0) {
          discarded_.insert({order.worker, order.clock});
        }
        break;
      case proto::Order::kApply:
        store_->Apply(optimizer_.get(), static_cast<float>(order.value));
        break;
      case proto::Order::kApplyDelta:
        store_->Apply(nullptr, static_cast<float>(order.value));
        break;
      case proto::Order::kReply: {
        auto it = pushers_.find(order.worker);
        if (it == pushers_.end()) {
          // Dropped here for not reading its replies, it may still be shard 0's.
          if (forgotten_.contains(order.worker)) break;
          spdlog::warn("{}: no connection from worker {} to send its slice of the model to", name_,
                       order.worker);
          break;
        }
        proto::Model header;
        header.version = static_cast<int64_t>(order.value);
        QueueModelReply(
            *store_, *workers_, &it->second.identity, header,
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
          if (Status sent = coordinator_->SendMessage(nullptr, proto::Orders{{order}});
              !sent.ok()) {
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
          Status sent =
              coordinator_->SendMessage(nullptr, proto::Slice{id, count}, std::move(payload));
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
  coordinator_seen_ = Clock::now();
  if (auto* orders = std::get_if<proto::Orders>(&message.body)) {
    for (const proto::Order& order : orders->orders) {
      // An admission waits for nothing: a worker's Hello may wait for it;
      // nor does a clipped step's norm, which a step queued waits for.
      if (order.kind == proto::Order::kAdmit) {
        Admit(order.worker, order.clock);
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
  std::array<net::Endpoint*, 2> sockets{&*coordinator_, &*workers_};
  net::Frames frames;
  last_heartbeat_ = Clock::now();
  while (!stopped_) {
    if (Interrupted()) {
      report_.signal = signal_->load();
      return Status::Ok();
    }
    DMLPS_ASSIGN_OR_RETURN(int ready, net::Endpoint::WaitAny(sockets, kPollSlice));
    if (ready >= 0) {
      // Orders first: they free what pushes wait on.
      while (!stopped_) {
        DMLPS_ASSIGN_OR_RETURN(bool got, coordinator_->Receive(&frames, milliseconds(0)));
        if (!got) break;
        DMLPS_RETURN_IF_ERROR(HandleCoordinator(frames));
      }
      for (int i = 0; i < 256; ++i) {
        DMLPS_ASSIGN_OR_RETURN(bool got, workers_->Receive(&frames, milliseconds(0)));
        if (!got) break;
        HandleWorker(frames);
      }
    }
    RunOrders();
    DropUnreading();
    ExpireHeld();
    const Clock::time_point now = Clock::now();
    if (now - last_heartbeat_ >= config_.heartbeat) {
      last_heartbeat_ = now;
      Status sent = coordinator_->SendMessage(nullptr, proto::Heartbeat{trace::NowMicros()});
      if (!sent.ok()) spdlog::debug("{}: heartbeat to shard 0 failed: {}", name_, sent.ToString());
    }
    if (now - coordinator_seen_ >= config_.worker_timeout) {
      return Status::Unavailable(
          fmt::format("shard 0 at {} silent for {:g} s", config_.coordinator,
                      std::chrono::duration<double>(config_.worker_timeout).count()));
    }
    for (const int64_t rank : streams_.StalledAt(now, kPushStall)) {
      Abandon(rank, "no chunk for " + std::to_string(kPushStall.count() / 1000) + " s");
    }
  }
  // The last orders may name pushes still arriving: take them, for a while.
  const Clock::time_point deadline = Clock::now() + kDrainLimit;
  while ((!orders_.empty() || store_->ApplyPending()) && Clock::now() < deadline) {
    DMLPS_ASSIGN_OR_RETURN(bool got, workers_->Receive(&frames, kPollSlice));
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
    if (coordinator_.has_value()) {
      (void)coordinator_->SendMessage(nullptr, proto::Error{registered.message(), true});
    }
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
    (void)coordinator_->SendMessage(nullptr, proto::Error{why, true});
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
