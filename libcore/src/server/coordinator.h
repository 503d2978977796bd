// Sharded servers, on shard 0: the other shards register here, get their
// orders (the policy's decisions, translated) in batches, and send back
// their slices of the snapshots taken, which are evaluated once whole.
// With one shard it holds nothing and sends nothing, so that shard 0's loop
// need not ask whether it is sharded at each call.
#ifndef DMLPS_SERVER_COORDINATOR_H_
#define DMLPS_SERVER_COORDINATOR_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "dmlps/base/status.h"
#include "dmlps/net/endpoint.h"
#include "dmlps/proto/codec.h"
#include "server/evaluator.h"
#include "server/hello_hold.h"
#include "server/loop.h"

namespace dmlps::server {

// How the log names the shard that said `hello`.
std::string ShardName(const proto::Hello& hello);

// Orders kept for one shard whose send queue is full, at most.
inline constexpr size_t kMaxBackloggedOrders = size_t{1} << 20;

class ShardCoordinator {
 public:
  // Takes a whole snapshot, once every shard's slice is in.
  using SnapshotSink = std::function<void(Snapshot snapshot, bool must)>;
  // Answers a worker's Hello held until every shard had registered.
  using HelloSink = std::function<void(const zmq::message_t& identity, const proto::Hello& hello,
                                       const net::Sender& sender)>;

  // Coordinates the shards of `bounds` (ShardBounds: shards + 1 offsets)
  // over `endpoint`, which must outlive it. `shard_welcome` is what every
  // registering shard is told of the job (model, policy, seed, optimizer);
  // its shard index, count and the bounds are filled in here.
  ShardCoordinator(net::Endpoint& endpoint, std::vector<int64_t> bounds,
                   proto::Welcome shard_welcome, SnapshotSink evaluate, HelloSink welcome_worker);

  bool sharded() const { return shard_count() > 1; }
  // An external model: every shard registering from now on is also sent
  // `layout` and its slice of `initial`, the whole model's initial values
  // (the other shards cannot make them up from a seed).
  void SetExternalModel(std::vector<model::TensorSpec> layout,
                        std::shared_ptr<const std::vector<float>> initial) {
    layout_ = std::move(layout);
    initial_ = std::move(initial);
  }
  // Without CURVE: a registering shard must present `secret`, the job's
  // (net/secret.h); under CURVE its key says what it is.
  void RequireSecret(std::string secret) { secret_ = std::move(secret); }
  int64_t shard_count() const { return static_cast<int64_t>(bounds_.size()) - 1; }
  // Every other shard has registered and said it is ready (its first
  // message after the Welcome: it has bound its address with the limits of
  // its slice): workers may be told where all are.
  bool AllRegistered() const { return ready_ == shard_count() - 1; }
  // The shards beyond 0 not registered and ready yet, in order.
  std::vector<int64_t> Missing() const;
  // Set once a shard is lost or gave up: the run cannot go on without its
  // slice of the model, and ends with this.
  const Status& fatal() const { return fatal_; }
  // Whether every other shard has written its checkpoint of `version`
  // (it answers Order kCheckpoint with the same order once written).
  bool Written(int64_t version) const;
  // The shard whose loss set fatal(); -1: none was lost (or another cause).
  int64_t lost() const { return lost_; }

  // The shard index of the peer `identity`, or -1 when it is no shard.
  int64_t ShardOf(const zmq::message_t& identity) const;
  // Registers the shard that said `hello` and welcomes it; once the last
  // has, answers the worker Hellos held. The reason it cannot (a job not
  // sharded, a shard that does not fit or is taken, no address), to refuse
  // the sender with for good, since a second try would not fit either.
  // `connection`: the one it said Hello over (Endpoint::LastSenderConnection).
  Status Register(const zmq::message_t& identity, const proto::Hello& hello,
                  int64_t connection = 0);
  // Holds a worker's Hello until every shard has registered: its Welcome
  // names every shard. Unavailable when as many are held as the job has
  // workers plus kConnectionHeadroom (HelloHold): the caller refuses it.
  // REQUIRES: !AllRegistered().
  Status HoldHello(const zmq::message_t& identity, const proto::Hello& hello,
                   const net::Sender& sender);
  // Whether `identity` is a worker whose Hello is held (it keeps itself alive).
  bool Holds(const zmq::message_t& identity) const;
  // Tells a worker's Welcome where every shard is and what it holds;
  // leaves it alone when not sharded.
  void DescribeShards(proto::Welcome* welcome) const;

  // Takes a message from shard `shard` (ShardOf): a slice, an error, a heartbeat.
  void HandleMessage(int64_t shard, proto::Message& message);

  // Queues an order for every other shard, in the order given; nothing
  // when not sharded.
  void Order(const proto::Order& order) {
    if (sharded()) orders_.push_back(order);
  }
  // Sends the orders queued since the last call to every other shard. A
  // shard whose send queue is full (it reads slower than orders come, for
  // a while) keeps them, in order, for the next call; more than
  // kMaxBackloggedOrders of them, and the shard is lost.
  void SendOrders();

  // Starts assembling a snapshot of the model as it stands after the orders
  // queued so far: `stamp` without its seconds and params. Returns its id,
  // for AddOwnSlice.
  int64_t BeginSnapshot(const Snapshot& stamp, bool must);
  // This shard's slice of snapshot `id`, taken `seconds` into training.
  void AddOwnSlice(int64_t id, double seconds, const std::vector<float>& values);
  // Waits, for at most `limit`, for the other shards' slices of the
  // snapshots begun; workers' messages are not read meanwhile.
  void AwaitSlices(std::chrono::milliseconds limit);

  void SendHeartbeats(int64_t now_us);
  // Marks the run lost (fatal) when a shard has been silent for `timeout`.
  void CheckSilence(Clock::time_point now, std::chrono::milliseconds timeout);
  // Marks the run lost (fatal) when `connection` is a shard's: its process
  // ended, no one waits for its silence. False when it is no shard's.
  bool LoseClosed(int64_t connection);
  // Sends the orders queued, then Stop with `reason`: the shards save what
  // those orders left. The workers whose Hellos are held get Stop too.
  void Stop(const std::string& reason);
  // Tells every other shard but the lost one to go back to its last
  // checkpoint and register again (an Error that asks it to rejoin).
  void RollBack(const std::string& why);

  // --clip-grad-norm across shards: takes step `step`'s sum over every
  // slice, once all are in (on this shard's loop, or inside a store call
  // of this shard's own: ModelStore::TakeGlobalSquares allows that).
  using NormSink = std::function<void(int64_t step, double squares)>;
  void set_norm_sink(NormSink sink) { norm_sink_ = std::move(sink); }
  // This shard's slice's sum of squares of step `step`'s gradient.
  void AddOwnNorm(int64_t step, double squares) { AddNorm(0, step, squares); }

 private:
  // Shard `shard`'s sum of squares for step `step`; once every shard's is
  // in, the total goes to every other shard (Order kClip) and to the sink.
  void AddNorm(int64_t shard, int64_t step, double squares);
  struct Peer {
    zmq::message_t identity;
    std::string address;
    std::string host;
    int64_t pid = 0;
    Clock::time_point last_seen;
    int64_t connection = 0;             // the one it registered over; 0: unknown
    int64_t written = -1;               // the last checkpoint version it wrote
    bool ready = false;                 // it has sent a message since its Welcome
    std::vector<proto::Order> backlog;  // orders its full send queue did not take yet
  };
  struct Assembly {
    Snapshot snapshot;
    std::shared_ptr<std::vector<float>> values;
    int64_t missing = 0;  // slices yet to come, this shard's included
    bool must = false;
  };

  // Shard `shard` sent its first message since its Welcome: it is ready for
  // workers. Once every shard is, answers the worker Hellos held.
  void MarkReady(int64_t shard);
  // Snapshot `id` gets shard `shard`'s slice of `count` floats, which
  // `copy` writes into the span it is given; evaluated once every slice is in.
  void FillSnapshot(int64_t id, int64_t shard, int64_t count,
                    const std::function<void(std::span<float>)>& copy);

  net::Endpoint& endpoint_;
  const std::vector<int64_t> bounds_;  // where the slices begin, plus the end
  const proto::Welcome shard_welcome_;
  std::vector<model::TensorSpec> layout_;              // an external model's; else empty
  std::shared_ptr<const std::vector<float>> initial_;  // its initial values; else null
  std::string secret_;                                 // RequireSecret's; empty: none asked
  SnapshotSink evaluate_;
  HelloSink welcome_worker_;

  std::vector<std::optional<Peer>> peers_;   // by shard index; [0] is this one
  std::map<std::string, int64_t> shard_of_;  // identity bytes -> shard index
  int64_t registered_ = 0;
  int64_t ready_ = 0;  // shards registered that have said they are ready
  // Workers that said Hello before every shard had registered: answered then.
  HelloHold waiting_hellos_;
  std::vector<proto::Order> orders_;        // not sent yet
  std::map<int64_t, Assembly> assemblies_;  // snapshots waiting for slices, by id
  int64_t next_snapshot_id_ = 0;
  Status fatal_;
  int64_t lost_ = -1;
  NormSink norm_sink_;
  std::map<int64_t, std::vector<std::optional<double>>> norms_;  // by step, per shard
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_COORDINATOR_H_
