// The simulator's network (NetworkModel): when each message arrives. It
// sees messages only as the slots the simulator keeps them in, and nodes
// as numbers: the workers 0..n-1, then the server's shards n..n+S-1.
//
// On wires, every link (each node's, each direction its own) carries one
// message at a time: a message starts once both ends' links are free. With
// cores_copy on shared cores the host's cores copy each message instead:
// one connection per pair of nodes and direction delivers its messages in order,
// each a CPU job the simulator runs (SimCpu) among the others.
#ifndef DMLPS_SIM_NETWORK_H_
#define DMLPS_SIM_NETWORK_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <unordered_map>
#include <vector>

#include "dmlps/sim/sim.h"

namespace dmlps::sim {

class SimNetwork {
 public:
  struct Hooks {
    // The message in `slot` arrives at virtual time `time`, at the server
    // or at its worker.
    std::function<void(double time, int64_t slot, bool to_server)> arrive;
    // The host's cores start copying the message in `slot`: `work` seconds
    // of CPU. The simulator calls CopyDone once they are done.
    std::function<void(int64_t slot, double work)> start_copy;
  };

  // The network `model` between `workers` workers and the server's
  // `servers` shards (nodes of their own); messages are copied by the cores
  // when `copies_on_cores` (cores_copy with shared cores).
  SimNetwork(const NetworkModel& model, int64_t workers, bool copies_on_cores, Hooks hooks,
             int64_t servers = 1);

  // The node of the server (its shard 0).
  int64_t server_node() const { return workers_; }
  // Sends the message in `slot`, of `bytes`, from node `from` to node `to`
  // at `now`; hooks.arrive tells when it is there.
  void Send(double now, int64_t from, int64_t to, int64_t bytes, int64_t slot);
  // As Send, for a message of a few bytes between server shards (orders):
  // on wires it shares the links with what they carry, as a connection of
  // its own does, instead of waiting behind it: it arrives after its own
  // transfer time and the latency, and holds no link.
  void SendAside(double now, int64_t from, int64_t to, int64_t bytes, int64_t slot);
  // The cores finished copying the message in `slot` at `now`: it arrives
  // after the latency, and the next on its connection starts.
  void CopyDone(double now, int64_t slot);

 private:
  // A message the cores copy, or wait to.
  struct Copy {
    int64_t channel = 0;
    double work = 0;
    bool to_server = false;
  };

  const NetworkModel model_;
  const int64_t workers_;
  const bool copies_on_cores_;
  Hooks hooks_;
  std::vector<double> tx_free_;  // per node: its link busy until
  std::vector<double> rx_free_;
  // Per message slot its copy, and per connection the slots whose copy
  // runs (front) or waits.
  std::vector<Copy> copies_;
  std::unordered_map<int64_t, std::deque<int64_t>> channels_;  // by from * nodes + to
  std::unordered_map<int64_t, double> aside_last_;  // SendAside: per connection, the last arrival
};

}  // namespace dmlps::sim

#endif  // DMLPS_SIM_NETWORK_H_
