#include "server/admissions.h"

#include <sched.h>
#include <spdlog/spdlog.h>
#include <sys/random.h>

#include <algorithm>
#include <string>
#include <thread>
#include <utility>

#include "server/loop.h"

namespace dmlps::server {

namespace {

// A secret, non-zero ticket from the kernel's random source.
int64_t NewTicket() {
  uint64_t bits = 0;
  if (getrandom(&bits, sizeof bits, 0) != static_cast<ssize_t>(sizeof bits)) {
    bits = static_cast<uint64_t>(Clock::now().time_since_epoch().count()) * 0x9E3779B97F4A7C15ull;
  }
  return static_cast<int64_t>(bits >> 2) | 1;
}

// The cores this process may run on (its affinity mask; else what the
// machine has, at least one).
int64_t HostCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max<int64_t>(1, std::thread::hardware_concurrency());
}

}  // namespace

void Admissions::Admit(const zmq::message_t& identity, const proto::Hello& hello, int64_t rank,
                       const net::Sender& sender) {
  members_.Admit(rank, identity, hello, Clock::now(), sender);
  sync::WorkerInfo info{hello.max_batch};
  // A worker on this host shares its cores with the server and the others
  // here (auto reads the cores they share from that, docs/auto-readings.md).
  if (hello.host == net::HostName()) info.host_cores = HostCores();
  // advise reads them from the trace as auto does (SharedCoresAtMost).
  if (tracer_) {
    tracer_->Instant("run", "worker admitted", trace::NowMicros(),
                     {{"worker", rank}, {"host_cores", info.host_cores}});
  }
  driver_.Attach(rank, info);
  if (training()) {
    spdlog::info("worker {} joins the running job from {}:{}; it trains once its data is loaded",
                 rank, hello.host, hello.pid);
  } else {
    spdlog::info("worker {} joined from {}:{} ({}/{})", rank, hello.host, hello.pid,
                 members_.joined(), workers_);
  }
}

void Admissions::TakeHello(const zmq::message_t& identity, const proto::Hello& hello, int64_t rank,
                           const std::string& who) {
  // A peer admitted (or held for its Welcome) keeps its connection when
  // a flood of others wants room.
  if (hello.shard >= 0) {
    if (!endpoint_.LastSenderMayBeShard()) {
      // An admitted worker's key is no shard's: shards hold the servers' key pair.
      refusals_.Refuse(identity, ShardName(hello),
                       "a server shard must connect with the servers' key pair (--curve-secret)",
                       true);
    } else if (Status registered =
                   shards_.Register(identity, hello, endpoint_.LastSenderConnection());
               !registered.ok()) {
      refusals_.Refuse(identity, ShardName(hello), registered.message(), true);
    } else {
      endpoint_.AdmitSender();
    }
  } else if (!shards_.AllRegistered() && rank < 0) {
    // Its Welcome names every shard: it waits until all are here.
    if (Status held = shards_.HoldHello(identity, hello, endpoint_.LastSender()); !held.ok()) {
      refusals_.Refuse(identity, who, held.message(), true, /*rejoin=*/true);
    } else {
      endpoint_.AdmitSender();
    }
  } else if (HandleHello(identity, hello, endpoint_.LastSender())) {
    endpoint_.AdmitSender();
  }
}

void Admissions::AnswerHeld(const HelloHold::Held& held) {
  const auto& [identity, hello, sender] = held;
  if (hello.shard >= 0) {
    if (Status registered = shards_.Register(identity, hello, sender.connection);
        !registered.ok()) {
      spdlog::warn("refused {}: {}", ShardName(hello), registered.message());
      Status sent = endpoint_.SendMessage(&identity, proto::Error{registered.message(), true});
      if (!sent.ok()) spdlog::debug("could not tell it why: {}", sent.ToString());
    }
  } else if (!shards_.AllRegistered()) {
    // Its Welcome names every shard.
    if (Status on_hold = shards_.HoldHello(identity, hello, sender); !on_hold.ok()) {
      Status sent = endpoint_.SendMessage(&identity, proto::Error{on_hold.message(), true, true});
      if (!sent.ok()) spdlog::debug("could not tell it why: {}", sent.ToString());
    }
  } else {
    HandleHello(identity, hello, sender);
  }
}

bool Admissions::HandleHello(const zmq::message_t& identity, const proto::Hello& hello,
                             const net::Sender& sender) {
  const std::string who =
      fmt::format("peer {} ({}:{})", HexPrefix(identity), hello.host, hello.pid);
  if (hello.evaluator) {
    refusals_.Refuse(identity, who, "this server evaluates snapshots itself (no --evaluator)",
                     true);
    return false;
  }
  if (!layout_.empty()) {
    const std::string diff = hello.layout.empty()
                                 ? "it announces none (dmlps-worker --announce-layout)"
                                 : model::FirstLayoutDifference(hello.layout, layout_);
    if (!diff.empty()) {
      refusals_.Refuse(identity, who, "the worker's layout is not the external model's: " + diff,
                       true);
      return false;
    }
  }
  // One rank per key: a key that holds a rank and joins again from a new
  // connection (a worker restarted) takes its place; the old one is lost.
  if (const int64_t held = members_.RankOfKey(sender.key);
      held >= 0 && members_.RankOf(identity) != held) {
    lose_(held, "its key joined again from a new connection");
  }
  // A worker started again at once: its old connection may be closing
  // still, unseen by the loop; it is lost now, so that the new one takes
  // its rank (and data) rather than a new one.
  if (training() && members_.RankOf(identity) < 0) {
    std::vector<int64_t> closing;
    members_.ForEach([&](int64_t rank, const Member& m) {
      if (endpoint_.ConnectionClosed(m.connection)) closing.push_back(rank);
    });
    for (const int64_t rank : closing) lose_(rank, "its connection closed");
  }
  const HelloDecision decision = members_.Decide(identity, hello, training());
  int64_t rank = decision.rank;
  switch (decision.kind) {
    case HelloDecision::kRefuse:
      refusals_.Refuse(identity, who, decision.why, true);
      return false;
    case HelloDecision::kKnown:
      // It starts afresh: under a pull codec its next model goes whole.
      members_.at(rank).replica.reset();
      break;
    case HelloDecision::kNewRank:
      rank = driver_.AddRank();
      [[fallthrough]];
    case HelloDecision::kAdmit:
      Admit(identity, hello, rank, sender);
      if (shards_.sharded()) {
        // The other shards admit this worker only with it (see Order kAdmit).
        tickets_[rank] = NewTicket();
        shards_.Order({proto::Order::kAdmit, rank, tickets_[rank], 0});
      }
      break;
  }
  SendWelcome(identity, rank);
  if (!training() && members_.joined() == workers_) {
    spdlog::info("all {} workers joined; training starts when each has loaded its data", workers_);
  }
  return true;
}

void Admissions::SendWelcome(const zmq::message_t& identity, int64_t rank) {
  proto::Welcome welcome = welcome_(rank);
  welcome.samples_done = members_.SamplesBefore(rank);
  shards_.DescribeShards(&welcome);
  if (auto ticket = tickets_.find(rank); ticket != tickets_.end()) welcome.ticket = ticket->second;
  Status sent = endpoint_.SendMessage(&identity, welcome);
  if (!sent.ok()) spdlog::warn("cannot welcome worker {}: {}", rank, sent.ToString());
}

}  // namespace dmlps::server
