// The workers of a server shard beyond 0 (shard.h): which ranks shard 0
// admitted under which ticket, the Hellos that wait for that word, the
// connection each rank pushes from, and what the shard tells the workers
// (a welcome, a refusal).
#ifndef DMLPS_SERVER_SHARD_WORKERS_H_
#define DMLPS_SERVER_SHARD_WORKERS_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <zmq.hpp>

#include "dmlps/net/endpoint.h"
#include "dmlps/proto/messages.h"
#include "server/loop.h"

namespace dmlps::server {

class ShardWorkers {
 public:
  // Runs before the connection of rank `rank` is replaced by another (a
  // worker that joined again from a new socket), while identity(rank) is
  // still the old one.
  using ReplacedFn = std::function<void(int64_t rank)>;

  // The workers of shard `shard_index` of `shard_count` (its log name
  // `name`), holding `num_params` parameters, that push to `endpoint`.
  // `endpoint` outlives this.
  ShardWorkers(net::Endpoint& endpoint, std::string name, int64_t num_params, int64_t shard_index,
               int64_t shard_count, ReplacedFn replaced);

  // The rank the worker at `identity` joined under; -1: none.
  int64_t RankOf(const zmq::message_t& identity) const;
  // Whether rank `rank` has a connection here.
  bool connected(int64_t rank) const { return pushers_.contains(rank); }
  // The connection of rank `rank`. REQUIRES: connected(rank).
  const zmq::message_t& identity(int64_t rank) { return pushers_[rank].identity; }
  // Whether rank `rank` was lost (Forget) and has not joined again.
  bool forgotten(int64_t rank) const { return forgotten_.contains(rank); }

  // A worker's Hello: welcomed when its ticket is the one shard 0 gave it,
  // else held until shard 0 says (Admit) or kHelloWait passes.
  void HandleHello(const zmq::message_t& identity, const proto::Hello& hello);
  // Shard 0 admitted worker `rank` with `ticket`: the Hellos held for it
  // are welcomed or refused.
  void Admit(int64_t rank, int64_t ticket);
  // Refuses the Hellos held longer than kHelloWait.
  void ExpireHeld();
  // Rank `rank` is lost: its connection is dropped, and forgotten(rank)
  // holds until it joins again.
  void Forget(int64_t rank);

  // Tells the peer at `identity` (`who`, in the log) that its message is
  // refused and why; `fatal`: it should give up, `rejoin`: say Hello again.
  // Logged at warning level for the first kLoudRefusals, then at debug.
  void Refuse(const zmq::message_t& identity, const std::string& who, const std::string& why,
              bool fatal, bool rejoin = false);
  // Refuses what rank `rank` (`who`) sent, and it goes on. REQUIRES:
  // connected(rank).
  void Refuse(int64_t rank, const std::string& who, const std::string& why) {
    Refuse(identity(rank), who, why, /*fatal=*/false);
  }

 private:
  // A worker's connection, where its slice of the model goes.
  struct Pusher {
    zmq::message_t identity;
  };
  struct HeldHello {
    zmq::message_t identity;
    proto::Hello hello;
    Clock::time_point since;
  };

  void Join(const zmq::message_t& identity, const proto::Hello& hello);

  net::Endpoint& endpoint_;
  const std::string name_;
  const int64_t num_params_;
  const int64_t shard_index_;
  const int64_t shard_count_;
  const ReplacedFn replaced_;
  std::map<int64_t, Pusher> pushers_;       // by rank
  std::map<int64_t, int64_t> tickets_;      // by rank: its admission's ticket (Order kAdmit)
  std::deque<HeldHello> held_;              // Hellos whose ticket shard 0 has not confirmed yet
  std::map<std::string, int64_t> rank_of_;  // identity bytes -> rank
  std::set<int64_t> forgotten_;             // ranks lost, not joined again
  int64_t refusals_ = 0;
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_SHARD_WORKERS_H_
