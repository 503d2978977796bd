// The simulated server's shards beyond 0 (SimConfig::shards), as
// dmlps-server --shard runs them (SHARDED SERVERS in dmlps-server(1)): each
// holds a slice of the model, gets each worker's push as its slice of it,
// and carries out shard 0's orders in the order given: stage a push (once
// it is there), discard one, apply the update, send a worker the slice.
// Only time is modelled here: the simulator does the math once, on shard 0,
// for the whole model, which is what the slices together hold.
#ifndef DMLPS_SIM_SHARDS_H_
#define DMLPS_SIM_SHARDS_H_

#include <cstdint>
#include <deque>
#include <vector>

#include "dmlps/sim/sim.h"
#include "sim/message.h"

namespace dmlps::sim {

// What the shards ask of the simulator.
class ShardHost {
 public:
  virtual ~ShardHost() = default;
  // Runs shard `k`'s CPU job of `work` seconds; calls SimShards::JobDone(k)
  // when it is done.
  virtual void StartShardJob(int64_t k, double work) = 0;
  // Sends `message` of `bytes` from shard `k` to worker `w`.
  virtual void SendFromShard(int64_t k, int64_t w, int64_t bytes, Message message) = 0;
};

class SimShards {
 public:
  // Shards 1..bounds.size()-2 of a model cut at `bounds` (server::ShardBounds),
  // serving `workers` workers at `cost`, sending their slices of the model in
  // `pull_codec`. REQUIRES: host outlives this.
  SimShards(std::vector<int64_t> bounds, int64_t workers, const CostModel& cost,
            const compress::Codec& pull_codec, ShardHost& host);

  // The parameters of shard k's slice, shard 0's included.
  int64_t SliceParams(int64_t k) const;
  // A push slice or a batch of orders arrived at shard k >= 1.
  void Receive(int64_t k, Message message);
  // Shard k's CPU job is done: what it sends goes out, and it goes on.
  void JobDone(int64_t k);

 private:
  struct Shard {
    std::deque<Message> inbox;
    std::deque<ShardOrder> orders;  // to carry out, in order
    std::vector<int64_t> held;      // per worker: pushes here not yet staged or discarded
    std::vector<int64_t> replies;   // workers the job under way answers
    bool busy = false;
  };

  // Starts shard k's next job, if it is idle and has something to do.
  void Next(int64_t k);
  // Carries out shard k's orders from the first until one needs a push not
  // there yet; their CPU time.
  double Carry(int64_t k);

  const std::vector<int64_t> bounds_;
  const CostModel cost_;
  const compress::Codec pull_codec_;
  ShardHost& host_;
  std::vector<Shard> shards_;  // index k; shard 0's entry unused
};

}  // namespace dmlps::sim

#endif  // DMLPS_SIM_SHARDS_H_
