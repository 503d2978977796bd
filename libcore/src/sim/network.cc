#include "sim/network.h"

#include <algorithm>
#include <utility>

namespace dmlps::sim {

SimNetwork::SimNetwork(const NetworkModel& model, int64_t workers, bool copies_on_cores,
                       Hooks hooks, int64_t servers)
    : model_(model),
      workers_(workers),
      copies_on_cores_(copies_on_cores),
      hooks_(std::move(hooks)),
      tx_free_(static_cast<size_t>(workers + servers), 0),
      rx_free_(static_cast<size_t>(workers + servers), 0) {}

void SimNetwork::Send(double now, int64_t from, int64_t to, int64_t bytes, int64_t slot) {
  const double gbps = model_.link_gbps;
  const double transfer = gbps > 0 ? static_cast<double>(bytes) * 8 / (gbps * 1e9) : 0;
  const bool to_server = to >= server_node();
  if (copies_on_cores_) {
    // One connection per pair of nodes and direction, in order, as ZeroMQ's are.
    const int64_t channel = from * static_cast<int64_t>(tx_free_.size()) + to;
    if (copies_.size() <= static_cast<size_t>(slot)) copies_.resize(static_cast<size_t>(slot) + 1);
    copies_[static_cast<size_t>(slot)] = {channel, transfer, to_server};
    std::deque<int64_t>& queue = channels_[channel];
    queue.push_back(slot);
    if (queue.size() == 1) hooks_.start_copy(slot, transfer);
    return;
  }
  // Both ends' links carry it at once, when both are free.
  const double start =
      std::max({now, tx_free_[static_cast<size_t>(from)], rx_free_[static_cast<size_t>(to)]});
  tx_free_[static_cast<size_t>(from)] = start + transfer;
  rx_free_[static_cast<size_t>(to)] = start + transfer;
  hooks_.arrive(start + transfer + model_.latency_s, slot, to_server);
}

void SimNetwork::SendAside(double now, int64_t from, int64_t to, int64_t bytes, int64_t slot) {
  if (copies_on_cores_) {
    Send(now, from, to, bytes, slot);
    return;
  }
  const double gbps = model_.link_gbps;
  const double transfer = gbps > 0 ? static_cast<double>(bytes) * 8 / (gbps * 1e9) : 0;
  // A connection delivers in order.
  double& last = aside_last_[from * static_cast<int64_t>(tx_free_.size()) + to];
  last = std::max(last, now + transfer + model_.latency_s);
  hooks_.arrive(last, slot, to >= server_node());
}

void SimNetwork::CopyDone(double now, int64_t slot) {
  const Copy& copy = copies_[static_cast<size_t>(slot)];
  hooks_.arrive(now + model_.latency_s, slot, copy.to_server);
  const auto it = channels_.find(copy.channel);
  std::deque<int64_t>& queue = it->second;
  queue.pop_front();
  if (queue.empty()) {
    channels_.erase(it);
  } else {
    hooks_.start_copy(queue.front(), copies_[static_cast<size_t>(queue.front())].work);
  }
}

}  // namespace dmlps::sim
