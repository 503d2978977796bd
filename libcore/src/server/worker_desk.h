// Shard 0's side that faces its workers: the messages reaching its
// endpoint dispatched and checked (the other shards' handed to the
// coordinator, Hellos to its Admissions, pushes and their chunks to its
// PushIntake), pulls taken in for the policy driver, the driver's replies
// sent (it is the driver's reply sink), and workers lost to silence, to
// their own errors or to a full send queue. The run around it (its phases)
// is ParameterServer's; the model's updates, evaluations and checkpoints
// are parts of their own.
#ifndef DMLPS_SERVER_WORKER_DESK_H_
#define DMLPS_SERVER_WORKER_DESK_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "dmlps/base/status.h"
#include "dmlps/compress/compress.h"
#include "dmlps/net/endpoint.h"
#include "dmlps/proto/codec.h"
#include "dmlps/sync/driver.h"
#include "dmlps/sync/summary.h"
#include "dmlps/trace/trace.h"
#include "server/admissions.h"
#include "server/coordinator.h"
#include "server/intake.h"
#include "server/membership.h"
#include "server/model_store.h"
#include "server/push_intake.h"
#include "server/refusals.h"

namespace dmlps::server {

struct WorkerDeskOptions {
  int64_t workers = 0;                          // the job's ranks, filled before training
  std::chrono::milliseconds worker_timeout{0};  // a member silent longer is lost
  int64_t max_message_bytes = 0;                // a larger message is refused unread
  // An external model's layout, which every worker's Hello must announce;
  // empty: a built-in model (a worker announcing none is not checked).
  std::vector<model::TensorSpec> layout;
  // Offered each message from a sender that is no worker first (an
  // evaluator's); true: it was taken. Null: none.
  std::function<bool(const zmq::message_t&, proto::Message&)> peer;
  // The most samples one push may claim (its weight in a sum weighted by
  // samples) until the driver gives the worker another batch: the batch,
  // or the token size. 0: no cap (local modes push deltas of many steps,
  // weighted alike whatever their samples).
  int64_t max_push_samples = 0;
  // The most ranks a running job grows to as workers join (kMaxRanks at
  // most), and why no more join beyond them.
  int64_t max_ranks = kMaxRanks;
  std::string why_bounded = "the most it takes";
  // The job's codecs (Welcome::push_codec, pull_codec): pushes in another
  // are refused; models after a worker's first go out as encoded changes.
  compress::Codec push_codec;
  compress::Codec pull_codec;
};

// The workers that came and went while the run went on, for its report.
struct Turnover {
  int64_t lost = 0;       // declared lost (silent, or gave up)
  std::string last_lost;  // the last of them and why; empty: none
  int64_t joined = 0;     // joined once training was running
};

class WorkerDesk : public sync::ReplySink {
 public:
  // Starts training: every rank of the job has a worker whose data is loaded.
  using StartFn = std::function<void()>;

  // Serves the workers of `endpoint` for `driver`, whose pushes stream into
  // `store`, and passes the other shards' messages to `shards`; `tracer`
  // (null: none) gets the workers' comings, goings and pushes. All outlive
  // this. Training runs once `driver` has started, which `start` does; the
  // desk is the driver's reply sink once connected (PolicyDriver::Connect).
  WorkerDesk(const WorkerDeskOptions& options, net::Endpoint& endpoint, ShardCoordinator& shards,
             sync::PolicyDriver<Gradient>& driver, ModelStore& store, trace::TraceWriter* tracer,
             StartFn start, Admissions::WelcomeFn welcome);
  WorkerDesk(const WorkerDesk&) = delete;
  WorkerDesk& operator=(const WorkerDesk&) = delete;

  // Waits at most `wait` for a message and handles it; an error only when
  // the endpoint fails, since a bad message is its sender's to hear about.
  Status HandleNext(std::chrono::milliseconds wait);
  // What answers Hellos: those the coordinator held until every shard had
  // registered, and those held while an external model was awaited, come
  // to it from outside the desk.
  Admissions& admissions() { return admissions_; }
  // The workers' pushes, whose stalled streams the run closes in time.
  PushIntake& pushes() { return pushes_; }

  // The driver's replies to the member of `rank` (see sync::ReplySink); a
  // model reply is ordered of the other shards as well.
  void SendModel(int64_t rank, const sync::Reply& reply) override;
  void SendContinue(int64_t rank, bool download, const sync::Reply& reply) override;
  void SendSyncNow(int64_t rank, int64_t round) override;
  // A late push dropped is logged quietly; any other is refused, with why.
  void Dropped(int64_t rank, const sync::Drop& drop) override;

  // Tells every member and shard this side is alive.
  void SendHeartbeats();
  // Loses the members silent for longer than their limit; the coordinator
  // checks the shards.
  void CheckSilence();
  // Loses at once each member, and each shard, whose connection closed
  // (its process ended): no one waits for its silence.
  void LoseClosed();
  // Loses the members a model reply could not be sent to because their
  // send queue was full (BindOptions::max_queued_messages): they do not
  // read what they are sent, and would make the server hold it.
  void DropUnreading();
  // Before the run ends: lets the streams in flight finish, reading nothing
  // but their chunks, for at most `limit`.
  void DrainStreams(std::chrono::milliseconds limit);
  // Stops every member, then the other shards, with `reason`.
  void Stop(const std::string& reason);
  // Sharded, a shard lost: tells every member and the other shards to
  // join again, the job going back to its last checkpoint, with `why`.
  void RollBack(const std::string& why);

  // Logs what each member did over a run of `seconds` (those that pushed)
  // and returns their totals, for the closing summary.
  std::vector<sync::WorkerTotals> LogTotals(double seconds);
  // The model payload bytes sent to workers so far, as sent: encoded under
  // a pull codec.
  int64_t model_bytes_sent() const { return model_bytes_->load(); }
  const Turnover& turnover() const { return turnover_; }
  // How many workers hold a rank now.
  int64_t joined() const { return members_.joined(); }

 private:
  bool training() const { return driver_.started(); }
  void HandleFrames(net::Frames& frames);
  void HandlePull(int64_t rank, const proto::Pull& pull);
  // Goes on without worker `rank`: the policy stops waiting for it.
  void LoseWorker(int64_t rank, const std::string& why);

  const WorkerDeskOptions options_;
  net::Endpoint& endpoint_;
  ShardCoordinator& shards_;
  sync::PolicyDriver<Gradient>& driver_;
  ModelStore& store_;
  trace::TraceWriter* const tracer_;
  StartFn start_;

  Membership members_;  // as many ranks as the policy's
  Refusals refusals_;
  PushIntake pushes_;
  Admissions admissions_;
  net::Frames frames_;  // the message received last
  Turnover turnover_;
  // Members whose send queue was found full, by rank, with their identity
  // bytes (the rank may have gone to another worker since) and why.
  std::map<int64_t, std::pair<std::string, std::string>> unreading_;
  // Model payload bytes sent; shared with the replies still queued.
  std::shared_ptr<std::atomic<int64_t>> model_bytes_ = std::make_shared<std::atomic<int64_t>>(0);
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_WORKER_DESK_H_
