// Snapshots evaluated by an evaluator process (dmlps-server --evaluator):
// one evaluator joins with a Hello whose evaluator flag is set and that
// carries the job secret (the role is the operator's to grant: a peer
// without it is refused, and takes nothing), gets each snapshot as an
// Evaluate message and answers with an Evaluation, which becomes the result
// the server would have computed itself, stamped with the snapshot's time.
// An evaluator that leaves or does not answer within its time limit is
// dropped with a log line: the snapshots until another with the secret
// joins are skipped, and the run goes on.
#ifndef DMLPS_SERVER_REMOTE_EVALUATOR_H_
#define DMLPS_SERVER_REMOTE_EVALUATOR_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <vector>
#include <zmq.hpp>

#include "dmlps/net/endpoint.h"
#include "dmlps/proto/codec.h"
#include "server/evaluator.h"
#include "server/loop.h"

namespace dmlps::server {

class RemoteEvaluator : public SnapshotEvaluator {
 public:
  // Handles one message of the endpoint, for WaitIdle (the event loop's).
  using PumpFn = std::function<void()>;

  // Sends on `endpoint` (which outlives this); an evaluator must present
  // `secret` (never empty: the config requires one), gets `welcome` when it
  // joins and must answer a snapshot within `timeout`.
  RemoteEvaluator(net::Endpoint& endpoint, proto::Welcome welcome, std::string secret,
                  std::chrono::milliseconds timeout, PumpFn pump)
      : endpoint_(endpoint),
        welcome_(std::move(welcome)),
        secret_(std::move(secret)),
        timeout_(timeout),
        pump_(std::move(pump)) {}

  // Handles a message from a peer that is not a worker: an evaluator's
  // Hello, and the Evaluations, heartbeats and errors of the evaluator.
  // False: the message is not the evaluator's (the caller handles it).
  bool Handle(const zmq::message_t& identity, proto::Message& message);
  bool connected() const { return identity_.has_value(); }
  // Training need not wait: an evaluator is connected, or one came and went.
  bool joined_once() const { return identity_.has_value() || lost_; }
  // Drops an evaluator that has not answered in time (logged).
  void CheckTimeout();
  // Tells the evaluator the server is alive, on the workers' cadence: it
  // may wait long between snapshots (for the workers, for --eval-every).
  void SendHeartbeat(int64_t now_us);
  // Tells the evaluator the run is over.
  void Stop(const std::string& reason);

  void SubmitOrSkip(Snapshot snapshot, bool must) override;
  int64_t skipped() const override { return skipped_; }
  std::vector<Evaluation> TakeResults() override;
  void WaitIdle() override;
  void DropPending() override { queue_.clear(); }

 private:
  void Join(const zmq::message_t& identity, const proto::Hello& hello);
  void Take(const proto::Evaluation& evaluation);
  // Sends the next queued snapshot when none is out.
  void SendNext();
  // Goes on without the evaluator: what it had and what is queued is skipped.
  void Lose(const std::string& why);
  void Refuse(const zmq::message_t& identity, const std::string& why);

  net::Endpoint& endpoint_;
  const proto::Welcome welcome_;
  const std::string secret_;
  const std::chrono::milliseconds timeout_;
  PumpFn pump_;
  std::optional<zmq::message_t> identity_;  // the evaluator; none yet or gone
  bool lost_ = false;                       // one came and went: no more waiting
  std::deque<Snapshot> queue_;
  std::optional<Snapshot> out_;  // sent, not answered yet
  int64_t out_id_ = 0;
  int64_t next_id_ = 1;
  int64_t sent_us_ = 0;
  Clock::time_point sent_at_;
  std::vector<Evaluation> done_;
  int64_t skipped_ = 0;
  int64_t unasked_ = 0;  // answers to snapshots not out, ignored
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_REMOTE_EVALUATOR_H_
