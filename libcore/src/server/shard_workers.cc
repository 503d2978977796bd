#include "server/shard_workers.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <utility>
#include <vector>

namespace dmlps::server {
namespace {

// A worker's Hello waits this long for shard 0's word that it admitted
// that worker (its Order kAdmit may come after the Hello)...
constexpr std::chrono::milliseconds kHelloWait{10000};
// ... and so many Hellos at most wait at once; beyond, the oldest is refused.
constexpr size_t kMaxHeldHellos = 256;

}  // namespace

ShardWorkers::ShardWorkers(net::Endpoint& endpoint, std::string name, int64_t num_params,
                           int64_t shard_index, int64_t shard_count, ReplacedFn replaced)
    : endpoint_(endpoint),
      name_(std::move(name)),
      num_params_(num_params),
      shard_index_(shard_index),
      shard_count_(shard_count),
      replaced_(std::move(replaced)) {}

int64_t ShardWorkers::RankOf(const zmq::message_t& identity) const {
  auto it = rank_of_.find(IdentityKey(identity));
  return it == rank_of_.end() ? -1 : it->second;
}

void ShardWorkers::Refuse(const zmq::message_t& identity, const std::string& who,
                          const std::string& why, bool fatal, bool rejoin) {
  if (++refusals_ <= kLoudRefusals) {
    spdlog::warn("{}: refused {}: {}", name_, who, why);
  } else {
    spdlog::debug("{}: refused {}: {}", name_, who, why);
  }
  Status sent = endpoint_.SendMessage(&identity, proto::Error{why, fatal, rejoin});
  if (!sent.ok()) spdlog::debug("cannot tell {}: {}", who, sent.ToString());
}

void ShardWorkers::HandleHello(const zmq::message_t& identity, const proto::Hello& hello) {
  auto known = tickets_.find(hello.rank);
  if (known != tickets_.end() && hello.ticket != 0 && known->second == hello.ticket) {
    endpoint_.AdmitSender();
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

void ShardWorkers::Admit(int64_t rank, int64_t ticket) {
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

void ShardWorkers::ExpireHeld() {
  const Clock::time_point now = Clock::now();
  while (!held_.empty() && now - held_.front().since >= kHelloWait) {
    const HeldHello& held = held_.front();
    Refuse(held.identity, "a peer claiming rank " + std::to_string(held.hello.rank),
           "shard 0 has not admitted it as worker " + std::to_string(held.hello.rank), true);
    held_.pop_front();
  }
}

void ShardWorkers::Join(const zmq::message_t& identity, const proto::Hello& hello) {
  if (auto old = pushers_.find(hello.rank); old != pushers_.end()) {
    // The same rank from a new socket: a worker that joined again.
    rank_of_.erase(IdentityKey(old->second.identity));
    replaced_(hello.rank);
  }
  pushers_[hello.rank].identity = net::CopyFrame(identity);
  forgotten_.erase(hello.rank);
  rank_of_[IdentityKey(identity)] = hello.rank;
  proto::Welcome welcome;
  welcome.rank = hello.rank;
  welcome.num_params = num_params_;
  welcome.shard_index = shard_index_;
  welcome.shard_count = shard_count_;
  if (Status sent = endpoint_.SendMessage(&identity, welcome); !sent.ok()) {
    spdlog::warn("{}: cannot welcome worker {}: {}", name_, hello.rank, sent.ToString());
  }
  spdlog::debug("{}: worker {} ({}:{}) connected", name_, hello.rank, hello.host, hello.pid);
}

void ShardWorkers::Forget(int64_t rank) {
  forgotten_.insert(rank);
  if (auto it = pushers_.find(rank); it != pushers_.end()) {
    rank_of_.erase(IdentityKey(it->second.identity));
    pushers_.erase(it);
  }
}

}  // namespace dmlps::server
