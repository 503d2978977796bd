// A worker's link to its server: joining it (and the other server shards),
// joining again when it went away, and the protocol's messages both ways,
// with heartbeats and the server's control messages handled on the side.
#ifndef DMLPS_WORKER_LINK_H_
#define DMLPS_WORKER_LINK_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "dmlps/base/status.h"
#include "dmlps/net/endpoint.h"
#include "dmlps/proto/codec.h"
#include "dmlps/worker/worker.h"
#include "worker/server_socket.h"
#include "worker/wire_codecs.h"

namespace dmlps::worker {

// How long one wait for the server lasts before the worker looks at signals
// and heartbeats again.
inline constexpr std::chrono::milliseconds kPollSlice{100};

// Who a worker says it is when it connects: the keys it connects with, the
// job secret and its role in every Hello, and in its Hellos to the server
// (not to other shards) an external model it announces.
class Introduction {
 public:
  // Reads the CURVE keys and the job secret `link` names.
  Status LoadKeys(const LinkSpec& link);
  // Every connection's options: the CURVE keys LoadKeys read.
  const net::ConnectOptions& connect_options() const { return connect_options_; }
  void Announce(std::vector<model::TensorSpec> layout,
                std::shared_ptr<const std::vector<float>> values) {
    layout_ = std::move(layout);
    values_ = std::move(values);
  }
  void JoinAsEvaluator() { evaluator_ = true; }
  // The Hello to the server (`to_server`) or another shard; the payload
  // it carries (an announced model's values) into *payload.
  proto::Hello HelloFor(bool to_server, int64_t rank, int64_t threads, int64_t max_batch,
                        int64_t ticket, net::Frames* payload) const;

 private:
  net::ConnectOptions connect_options_;
  bool evaluator_ = false;
  std::string secret_;                                // empty: none
  std::vector<model::TensorSpec> layout_;             // empty: none announced
  std::shared_ptr<const std::vector<float>> values_;  // with it: the initial values
};

class ServerLink {
 public:
  // The thread that constructs the link is the one that may use its sockets
  // (and the link's own heartbeat thread, see BusyScope and ServerSocket).
  ServerLink(const WorkerConfig& config, const std::atomic<int>* signal);
  ServerLink(const ServerLink&) = delete;
  ServerLink& operator=(const ServerLink&) = delete;
  ~ServerLink() = default;

  // While one is alive the worker is busy computing on its own thread (a
  // step, a user's Join, an evaluation) and a thread of the link's own sends
  // shard 0 a Heartbeat every --heartbeat-ms, so that a step of any length
  // does not look like a dead worker; it also takes shard 0's messages off
  // the socket, keeping all but heartbeats for the caller. Only then: a
  // worker stuck anywhere else falls silent and is declared lost. Scopes
  // may nest and may be opened on any thread.
  class BusyScope {
   public:
    explicit BusyScope(ServerLink* link) : link_(link) { link_->SetBusy(+1); }
    ~BusyScope() { link_->SetBusy(-1); }
    BusyScope(const BusyScope&) = delete;
    BusyScope& operator=(const BusyScope&) = delete;

   private:
    ServerLink* link_;
  };
  // Counts a computation in (+1) or out (-1), as BusyScope does; for callers
  // that hold the link through a callback.
  void SetBusy(int delta) { socket_.SetBusy(delta); }
  // Heartbeats the link's thread has sent so far (for tests).
  int64_t busy_heartbeats() { return socket_.busy_heartbeats(); }

  // Reads the CURVE keys and the job secret the config names; before Join,
  // so that a bad key fails before any server waits for this worker.
  Status LoadKeys() { return introduction_.LoadKeys(config_.link); }
  // Says Hello (offering `max_batch` samples a step), waits for the Welcome
  // and joins the other server shards it names. Unavailable when no server
  // answers within --connect-timeout, or when the server stops first;
  // Refused when the server refuses this worker (its rank, layout, secret).
  Status Join(int64_t max_batch);
  // Joins the server again after it went away, with the keys and max_batch
  // that Join had, retrying with back-off for --reconnect-timeout;
  // Unavailable when it does not come back, Config when it comes back with
  // another job. True when the new Welcome moved this worker to another rank
  // or shard, so its data must be set up again; ok and stopped() when the run
  // ended meanwhile.
  Result<bool> Rejoin();
  // Tells the server why this worker leaves, so it does not wait for it;
  // nothing when there is no server left to tell.
  void Leave(const std::string& why);

  // Sends Pull for step `clock`: the server answers with the model.
  Status SendPull(int64_t clock);
  // Sends a step's push and its payload: whole or streamed in chunks, and
  // with sharded servers each shard its slice. `then`, when given, goes
  // right after the push's header, before its chunks (the next Pull, so that
  // a large model streams back while the gradient is still arriving).
  // Under the job's push codec (Welcome::push_codec) the payload goes
  // encoded, inline, through the link's error feedback, which a (re)join
  // resets (docs/compression.md, "Compressed pushes and pulls").
  Status SendPush(proto::Push push, std::shared_ptr<const std::vector<float>> payload,
                  const proto::Body* then = nullptr);
  // The payload bytes SendPush puts on the wire for a push of `floats` floats.
  int64_t PushWireBytes(size_t floats) const;
  // Waits for a message of a type in `wants` (or Stop), handling heartbeats,
  // the server's warnings and SyncNow on the way; Unavailable when the
  // server stays silent for --server-timeout, Refused when it refuses this
  // worker for good.
  Result<proto::Message> Await(std::initializer_list<proto::MsgType> wants);
  // Handles what arrived without blocking: a Stop, a SyncNow, a warning.
  Status PollControl();
  // Copies the model whose header `message` (a Model from shard 0) is into
  // `params`, streamed chunks as they arrive and the other shards' slices
  // from them; returns shard 0's header. A model that carries digests (the
  // first since joining) is checked against them: DataLoss when any slice
  // differs from the one its shard sent. Under a pull codec an encoded model
  // is the change since the last one taken, added into the link's copy of
  // that, which then goes to `params`: Protocol error, `params` untouched,
  // when its bytes do not decode. A Stop may cut it short: see stopped().
  Result<proto::Model> TakeModel(proto::Message& message, std::span<float> params);
  // Sleeps `d`, heartbeating meanwhile so that a long emulated delay does
  // not look like a dead worker; Unavailable when a signal arrives.
  Status Pause(std::chrono::microseconds d);

  bool Interrupted() const { return signal_ != nullptr && signal_->load() != 0; }
  // The server said Stop; stop_reason() says why.
  bool stopped() const { return stop_; }
  const std::string& stop_reason() const { return stop_reason_; }
  // The last failure was the server going silent or forgetting this worker:
  // worth a Rejoin.
  bool server_lost() const { return server_lost_; }
  // The newest round a SyncNow named; -1 since the last (re)join.
  int64_t sync_round() const { return sync_round_; }
  const proto::Welcome& welcome() const { return welcome_; }
  // The rank the server gave; -1 until it did.
  int64_t rank() const { return rank_; }
  int64_t reconnects() const { return reconnects_; }

  // What every Hello to the server (not to other shards) announces from now
  // on: an external model's layout and initial values.
  void Announce(std::vector<model::TensorSpec> layout,
                std::shared_ptr<const std::vector<float>> values) {
    introduction_.Announce(std::move(layout), std::move(values));
  }
  // Joins as an evaluator (proto::Hello::evaluator), not as a worker.
  void JoinAsEvaluator() { introduction_.JoinAsEvaluator(); }
  // Sends an evaluator's result to the server.
  Status SendEvaluation(const proto::Evaluation& evaluation);

 private:
  // Server shards by number: 0 is the server (socket_), k >= 1 shards_[k - 1].
  // Await and Receive from shard `shard`; Await's messages aside from shard
  // 0 meanwhile (PollControl).
  Result<proto::Message> Await(size_t shard, std::initializer_list<proto::MsgType> wants,
                               std::chrono::milliseconds silence);
  Result<bool> Receive(size_t shard, net::Frames* frames, std::chrono::milliseconds timeout);
  // Deals with a message nobody waits for. Fails on a fatal Error.
  Status HandleAside(const proto::Message& message);
  // Sharded servers: connects to shards 1 and up (welcome_.servers) and
  // waits until each knows this worker.
  Status ConnectShards();
  // Where server shard k's slice of the parameters begins (k = shards: the end).
  int64_t Bound(size_t k) const;
  // Copies a Model message from shard `shard` into `out` (its slice of the
  // model), its streamed chunks as they arrive; returns the digest the slice
  // came with, once checked (0: none). DataLoss when `out` does not match it.
  Result<uint64_t> TakeSlice(size_t shard, proto::Message& message, std::span<float> out);
  // Says Hello to shard `shard` as rank `rank` (-1: any).
  Status SayHello(size_t shard, int64_t rank, int64_t max_batch, int64_t ticket = 0);

  const WorkerConfig& config_;
  const std::atomic<int>* signal_;
  zmq::context_t context_;
  // Shard 0's socket; after context_, so that it closes first.
  ServerSocket socket_;
  // Sharded servers: shards 1 and up, on a context of their own.
  std::unique_ptr<zmq::context_t> shard_context_;
  std::vector<net::Endpoint> shards_;
  Introduction introduction_;  // keys read before joining
  int64_t max_batch_ = 0;      // offered to every shard, and again on a rejoin
  proto::Welcome welcome_;
  int64_t rank_ = -1;
  int64_t reconnects_ = 0;
  int64_t sync_round_ = -1;
  bool server_lost_ = false;  // the server went silent, or no longer knows this worker
  bool refused_ = false;      // the server refused this worker (fatal Error)
  bool gave_up_ = false;      // the server did not come back: no one to tell
  bool stop_ = false;
  std::string stop_reason_;
  // The job's codecs, from the last Welcome.
  WireCodecs codecs_;
};

}  // namespace dmlps::worker

#endif  // DMLPS_WORKER_LINK_H_
