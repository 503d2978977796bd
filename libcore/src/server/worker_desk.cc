// Shard 0 and its workers: their messages dispatched and checked, the
// Hellos Membership decides on carried out, pulls, pushes and the chunks
// of streamed pushes taken in, the driver's replies sent, and workers lost
// to silence or their own errors.
#include "server/worker_desk.h"

#include <sched.h>
#include <spdlog/spdlog.h>
#include <sys/random.h>

#include <algorithm>
#include <string>
#include <thread>
#include <utility>

#include "dmlps/net/endpoint.h"
#include "server/loop.h"
#include "server/run_report.h"

namespace dmlps::server {

using std::chrono::milliseconds;

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

WorkerDesk::WorkerDesk(const WorkerDeskOptions& options, net::Endpoint& endpoint,
                       ShardCoordinator& shards, sync::PolicyDriver<Gradient>& driver,
                       ModelStore& store, trace::TraceWriter* tracer, StartFn start,
                       WelcomeFn welcome)
    : options_(options),
      endpoint_(endpoint),
      shards_(shards),
      driver_(driver),
      store_(store),
      tracer_(tracer),
      start_(std::move(start)),
      welcome_(std::move(welcome)),
      members_(options.workers, options.max_ranks, options.why_bounded) {}

Status WorkerDesk::HandleNext(milliseconds wait) {
  // A worker killed and started again at once: its old connection's loss
  // comes before the new one's Hello, which then takes the freed rank (and
  // its data).
  LoseClosed();
  Result<bool> got = endpoint_.Receive(&frames_, wait);
  if (!got.ok()) return got.status();
  if (*got) HandleFrames(frames_);
  return Status::Ok();
}

void WorkerDesk::Refuse(const zmq::message_t& identity, const std::string& who,
                        const std::string& why, bool fatal, bool rejoin) {
  ++refusals_;
  if (!training()) {
    NoteWhileWaiting(why, "refused a message from " + who + ": " + why);
  } else if (refusals_ <= kLoudRefusals) {
    spdlog::warn("refused a message from {}: {}", who, why);
    if (refusals_ == kLoudRefusals) spdlog::warn("further refusals are logged at debug level");
  } else {
    spdlog::debug("refused a message from {}: {}", who, why);
  }
  Status sent = endpoint_.SendMessage(&identity, proto::Error{why, fatal, rejoin});
  if (!sent.ok()) spdlog::debug("could not tell {} why: {}", who, sent.ToString());
}

void WorkerDesk::HandleFrames(net::Frames& frames) {
  if (frames.size() < 2) {
    // A ROUTER always gives the identity first, so one frame means an empty message.
    if (!frames.empty()) Refuse(frames[0], "peer " + HexPrefix(frames[0]), "empty message", true);
    return;
  }
  zmq::message_t identity = net::CopyFrame(frames[0]);
  if (const int64_t shard = shards_.ShardOf(identity); shard >= 0) {
    Result<proto::Message> message = proto::DecodeMessage(frames, 1);
    if (!message.ok()) {
      Refuse(identity, "server shard " + std::to_string(shard), message.status().message(), false);
      return;
    }
    shards_.HandleMessage(shard, *message);
    return;
  }
  const int64_t rank = members_.RankOf(identity);
  const std::string who = SenderName(rank, "peer " + HexPrefix(identity));
  // Counted before decoding, which may move the payload's frames out.
  int64_t wire_bytes = 0;
  for (size_t i = 1; i < frames.size(); ++i) wire_bytes += static_cast<int64_t>(frames[i].size());
  // One too large is dropped unread: a worker's step is not counted either.
  Result<proto::Message> message = DecodeBounded(frames, options_.max_message_bytes);
  if (!message.ok()) return Refuse(identity, who, message.status().message(), rank < 0);
  if (rank < 0 && options_.peer && options_.peer(identity, *message)) return;
  proto::Body& body = message->body;
  if (auto* hello = std::get_if<proto::Hello>(&body)) {
    // A peer admitted (or held for its Welcome) keeps its connection when
    // a flood of others wants room.
    if (hello->shard >= 0) {
      if (!endpoint_.LastSenderMayBeShard()) {
        // An admitted worker's key is no shard's: shards hold the servers' key pair.
        Refuse(identity, ShardName(*hello),
               "a server shard must connect with the servers' key pair (--curve-secret)", true);
      } else if (Status registered =
                     shards_.Register(identity, *hello, endpoint_.LastSenderConnection());
                 !registered.ok()) {
        Refuse(identity, ShardName(*hello), registered.message(), true);
      } else {
        endpoint_.AdmitSender();
      }
    } else if (!shards_.AllRegistered() && rank < 0) {
      // Its Welcome names every shard: it waits until all are here.
      if (Status held = shards_.HoldHello(identity, *hello, endpoint_.LastSender()); !held.ok()) {
        Refuse(identity, who, held.message(), true, /*rejoin=*/true);
      } else {
        endpoint_.AdmitSender();
      }
    } else if (HandleHello(identity, *hello, endpoint_.LastSender())) {
      endpoint_.AdmitSender();
    }
    return;
  }
  if (rank < 0 && shards_.Holds(identity)) {
    return;  // a worker waiting for its Welcome keeps itself alive
  }
  if (rank < 0) {
    // A worker of a server that restarted, or one declared lost: it may
    // Hello again.
    Refuse(identity, who, std::string(proto::MsgTypeName(proto::TypeOf(body))) + " before Hello",
           true,
           /*rejoin=*/true);
    return;
  }
  Member& member = members_.at(rank);
  member.last_seen = Clock::now();
  member.totals.bytes_sent += wire_bytes;
  if (auto* pull = std::get_if<proto::Pull>(&body)) {
    HandlePull(rank, *pull);
  } else if (auto* push = std::get_if<proto::Push>(&body)) {
    HandlePush(rank, *push, message->payload);
  } else if (auto* chunk = std::get_if<proto::Chunk>(&body)) {
    HandleChunk(rank, *chunk, message->payload);
  } else if (std::holds_alternative<proto::Heartbeat>(body)) {
    // Its arrival is all it says.
  } else if (auto* error = std::get_if<proto::Error>(&body)) {
    if (error->fatal) {
      LoseWorker(rank, "gave up: " + error->message);
    } else {
      spdlog::warn("worker {} reports: {}", rank, error->message);
    }
  } else {
    Refuse(identity, who,
           "a worker may not send " + std::string(proto::MsgTypeName(proto::TypeOf(body))), false);
  }
}

void WorkerDesk::Admit(const zmq::message_t& identity, const proto::Hello& hello, int64_t rank,
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
                 members_.joined(), options_.workers);
  }
}

bool WorkerDesk::HandleHello(const zmq::message_t& identity, const proto::Hello& hello,
                             const net::Sender& sender) {
  const std::string who =
      fmt::format("peer {} ({}:{})", HexPrefix(identity), hello.host, hello.pid);
  if (hello.evaluator) {
    Refuse(identity, who, "this server evaluates snapshots itself (no --evaluator)", true);
    return false;
  }
  if (!options_.layout.empty()) {
    const std::string diff = hello.layout.empty()
                                 ? "it announces none (dmlps-worker --announce-layout)"
                                 : model::FirstLayoutDifference(hello.layout, options_.layout);
    if (!diff.empty()) {
      Refuse(identity, who, "the worker's layout is not the external model's: " + diff, true);
      return false;
    }
  }
  // One rank per key: a key that holds a rank and joins again from a new
  // connection (a worker restarted) takes its place; the old one is lost.
  if (const int64_t held = members_.RankOfKey(sender.key);
      held >= 0 && members_.RankOf(identity) != held) {
    LoseWorker(held, "its key joined again from a new connection");
  }
  // A worker started again at once: its old connection may be closing
  // still, unseen by the loop; it is lost now, so that the new one takes
  // its rank (and data) rather than a new one.
  if (training() && members_.RankOf(identity) < 0) {
    std::vector<int64_t> closing;
    members_.ForEach([&](int64_t rank, const Member& m) {
      if (endpoint_.ConnectionClosed(m.connection)) closing.push_back(rank);
    });
    for (const int64_t rank : closing) LoseWorker(rank, "its connection closed");
  }
  const HelloDecision decision = members_.Decide(identity, hello, training());
  int64_t rank = decision.rank;
  switch (decision.kind) {
    case HelloDecision::kRefuse:
      Refuse(identity, who, decision.why, true);
      return false;
    case HelloDecision::kKnown:
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
  if (!training() && members_.joined() == options_.workers) {
    spdlog::info("all {} workers joined; training starts when each has loaded its data",
                 options_.workers);
  }
  return true;
}

void WorkerDesk::SendWelcome(const zmq::message_t& identity, int64_t rank) {
  proto::Welcome welcome = welcome_(rank);
  welcome.samples_done = members_.SamplesBefore(rank);
  shards_.DescribeShards(&welcome);
  if (auto ticket = tickets_.find(rank); ticket != tickets_.end()) welcome.ticket = ticket->second;
  Status sent = endpoint_.SendMessage(&identity, welcome);
  if (!sent.ok()) spdlog::warn("cannot welcome worker {}: {}", rank, sent.ToString());
}

void WorkerDesk::HandlePull(int64_t rank, const proto::Pull& pull) {
  Member& member = members_.at(rank);
  if (driver_.pull_pending(rank)) {
    Refuse(member.identity, "worker " + std::to_string(rank), "a pull is already pending", false);
    return;
  }
  if (training() && !driver_.active(rank)) {
    // A worker joining the running job, ready now: the policy counts it from
    // here, its first pull gets the current model.
    member.ready = true;
    ++turnover_.joined;
    spdlog::info("worker {} ({}:{}) trains from iteration {}; {} live workers", rank, member.host,
                 member.pid, driver_.iteration(), driver_.live_workers() + 1);
    if (tracer_) tracer_->Instant("run", "worker joined", trace::NowMicros(), {{"worker", rank}});
    driver_.Join(rank, pull.clock);
  }
  if (training() && pull.clock != driver_.worker_clock(rank)) {
    Refuse(member.identity, "worker " + std::to_string(rank),
           "pull for clock " + std::to_string(pull.clock) + ", but the worker has pushed " +
               std::to_string(driver_.worker_clock(rank)) + " times",
           false);
    return;
  }
  member.ready = true;
  driver_.Pull(rank);
  if (!training()) {
    // A worker pulls once its data is loaded: the run's clock starts when all
    // are ready, so loading data is not counted as training time.
    bool all_ready = members_.joined() == options_.workers;
    for (int64_t r = 0; r < options_.workers && all_ready; ++r) {
      all_ready = members_.Has(r) && driver_.pull_pending(r);
    }
    if (all_ready) start_();
  }
}

void WorkerDesk::HandlePush(int64_t rank, const proto::Push& push, net::Frames& payload) {
  Member& member = members_.at(rank);
  const std::string who = "worker " + std::to_string(rank);
  if (!training()) {
    Refuse(member.identity, who, "push before training started", false);
    return;
  }
  if (HasNegativeCounts(push)) {
    Refuse(member.identity, who, "push with a negative count or time", false);
    return;
  }
  if (HasImplausibleCounts(push)) {
    Refuse(member.identity, who, "push with a count or time beyond any run", false);
    return;
  }
  // A payload that cannot be used still ends the worker's step, so that one
  // bad push cannot stall the others; it just contributes nothing.
  sync::PushInfo info = PushInfoOf(push, member.replied_at, Clock::now());
  if (streams_.open(rank)) {
    AbandonStream(rank, "push " + std::to_string(streams_.clock(rank)) +
                            " broken off by the next push; its missing chunks are left out");
  }
  // A streamed gradient is checked chunk by chunk as it arrives (HandleChunk);
  // one that came whole is checked now.
  OpenedPush opened = OpenPush(push, store_.size(), "the model", payload);
  if (opened.fault == OpenedPush::kNone && options_.max_push_samples > 0) {
    // A push weighs its samples: one claiming more than its worker was
    // given would outweigh the others' real work.
    auto given = batch_given_.find(rank);
    const int64_t cap = given != batch_given_.end() ? given->second : options_.max_push_samples;
    if (push.samples > cap) {
      opened.fault = OpenedPush::kLayout;
      opened.why = "push claims " + std::to_string(push.samples) + " samples, more than the " +
                   std::to_string(cap) + " it was given";
    }
  }
  if (opened.fault == OpenedPush::kNone) {
    // Its chunks follow, if streamed. (A streamed push refused here has the
    // wrong size: its chunks are refused one by one rather than held.)
    streams_.Follow(rank, opened.tensor, push.clock);
  } else {
    opened.tensor.reset();
    info.usable = false;
    ++member.totals.refused;
    Refuse(member.identity, who, opened.why + "; step counted, gradient ignored", false);
  }

  if (tracer_) {
    tracer_->Instant("comm", "push", trace::NowMicros(),
                     {{"worker", rank},
                      {"clock", push.clock},
                      {"samples", push.samples},
                      {"staleness", driver_.policy().version() - push.base_version}});
  }
  const sync::PushOutcome outcome = driver_.Push(rank, info, opened.tensor);
  // The worker spent the time whether or not its push is used.
  sync::WorkerTotals& totals = member.totals;
  ++totals.steps;
  totals.compute_s += push.compute_us * 1e-6;
  totals.straggle_s += push.straggle_us * 1e-6;
  totals.wait_s += push.wait_us * 1e-6;
  totals.samples += outcome.samples;
  // The other shards free their slice of a push this one does not stage.
  if (!outcome.staged) shards_.Order({proto::Order::kDiscard, rank, push.clock, 0});
  driver_.Advance();
}

void WorkerDesk::HandleChunk(int64_t rank, const proto::Chunk& chunk, net::Frames& payload) {
  Member& member = members_.at(rank);
  const PushStreams::Taken taken = streams_.Take(rank, chunk.index, payload);
  if (taken.verdict == PushStreams::Verdict::kNoStream) {
    Refuse(member.identity, "worker " + std::to_string(rank), taken.why, false);
    return;
  }
  if (taken.verdict != PushStreams::Verdict::kTaken) ++member.totals.refused;
  if (taken.verdict == PushStreams::Verdict::kBroken) {
    AbandonStream(rank, taken.why + "; the rest of its gradient is left out");
    return;
  }
  if (taken.verdict == PushStreams::Verdict::kNonFinite) {
    Refuse(member.identity, "worker " + std::to_string(rank),
           taken.why + "; that chunk is left out", false);
  }
  store_.Advance();
}

void WorkerDesk::CloseStalledStreams() {
  for (const int64_t rank : streams_.StalledAt(Clock::now(), kStreamStall)) {
    AbandonStream(rank, "push " + std::to_string(streams_.clock(rank)) + ": no chunk for " +
                            std::to_string(kStreamStall.count() / 1000) +
                            " s; the rest of its gradient is left out");
  }
}

void WorkerDesk::AbandonStream(int64_t rank, const std::string& why) {
  Refuse(members_.at(rank).identity, "worker " + std::to_string(rank), why, false);
  streams_.Close(rank);
  store_.Advance();
}

void WorkerDesk::DrainStreams(milliseconds limit) {
  const Clock::time_point deadline = Clock::now() + limit;
  net::Frames frames;
  while (store_.pending() > 0 && streams_.any_open() && Clock::now() < deadline) {
    Result<bool> got = endpoint_.Receive(&frames, kPollSlice);
    if (!got.ok()) return;
    if (!*got || frames.size() < 2) continue;
    // Only the chunks matter now.
    const int64_t rank = members_.RankOf(frames[0]);
    if (rank < 0) continue;
    Result<proto::Message> message = proto::DecodeMessage(frames, 1);
    if (!message.ok()) continue;
    if (auto* chunk = std::get_if<proto::Chunk>(&message->body)) {
      HandleChunk(rank, *chunk, message->payload);
    }
  }
}

void WorkerDesk::SendModel(int64_t rank, const sync::Reply& reply) {
  Member& member = members_.at(rank);
  if (reply.batch > 0) batch_given_[rank] = reply.batch;
  member.replied_at = Clock::now();
  // One copy per model version, shared by every reply and evaluation of it;
  // a large model streams out chunk by chunk as its updates are applied.
  proto::Model header{reply.version, store_.size(), reply.batch, reply.token};
  header.local_steps = reply.local_steps;
  // The first model since it joined carries its digest: the worker checks
  // that it starts from the server's very model.
  const bool digest = !member.digest_sent;
  member.digest_sent = true;
  std::string identity(static_cast<const char*>(member.identity.data()), member.identity.size());
  QueueModelReply(
      store_, endpoint_, &member.identity, header, "worker " + std::to_string(rank),
      [this, rank, identity](const Status& why) {
        unreading_.emplace(rank, std::make_pair(identity, why.message()));
      },
      digest);
  shards_.Order({proto::Order::kReply, rank, digest ? 1 : 0, static_cast<double>(header.version)});
}

void WorkerDesk::SendContinue(int64_t rank, bool download, const sync::Reply& reply) {
  Member& member = members_.at(rank);
  if (reply.batch > 0) batch_given_[rank] = reply.batch;
  Status sent =
      endpoint_.SendMessage(&member.identity, proto::Continue{download, reply.token, reply.batch});
  if (!sent.ok()) spdlog::warn("cannot answer worker {}: {}", rank, sent.ToString());
}

void WorkerDesk::SendSyncNow(int64_t rank, int64_t round) {
  Status sent = endpoint_.SendMessage(&members_.at(rank).identity, proto::SyncNow{round});
  if (!sent.ok()) spdlog::warn("cannot sync worker {}: {}", rank, sent.ToString());
}

void WorkerDesk::Dropped(int64_t rank, const sync::Drop& drop) {
  if (drop.late) {
    // Work the policy expects to throw away (a late push): no one's fault.
    spdlog::debug("worker {}: push dropped: {}", rank, drop.reason);
  } else {
    Refuse(members_.at(rank).identity, "worker " + std::to_string(rank),
           "push dropped: " + drop.reason, false);
  }
}

void WorkerDesk::SendHeartbeats() {
  const int64_t now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  members_.ForEach([&](int64_t, Member& m) {
    Status sent = endpoint_.SendMessage(&m.identity, proto::Heartbeat{now_us});
    if (!sent.ok()) spdlog::debug("heartbeat to {}:{} failed: {}", m.host, m.pid, sent.ToString());
  });
  shards_.SendHeartbeats(now_us);
}

void WorkerDesk::LoseWorker(int64_t rank, const std::string& why) {
  Member& member = members_.at(rank);
  ++turnover_.lost;
  const std::string who = "worker " + std::to_string(rank) + " (" + member.host + ":" +
                          std::to_string(member.pid) + ")";
  turnover_.last_lost = who + ": " + why;
  // Its missing chunks will never come: let the others' replies go on.
  if (streams_.Close(rank)) store_.Advance();
  members_.Remove(rank);
  shards_.Order({proto::Order::kForget, rank, 0, 0});
  const int64_t live = driver_.live_workers() - (driver_.active(rank) ? 1 : 0);
  if (!training()) {
    NoteWhileWaiting(why, "lost " + who + " before training: " + why);
  } else {
    spdlog::warn("lost {}; going on with {} live worker{}", turnover_.last_lost, live,
                 live == 1 ? "" : "s");
  }
  if (tracer_) {
    tracer_->Instant("run", "worker lost", trace::NowMicros(), {{"worker", rank}, {"why", why}});
  }
  // The policy stops waiting for it; a round it held up may close.
  driver_.Lose(rank);
}

void WorkerDesk::NoteWhileWaiting(const std::string& reason, const std::string& what) {
  const std::optional<std::string> line = waiting_log_.Note(
      reason, what, options_.workers - members_.joined(), options_.workers, Clock::now());
  if (line) spdlog::warn("{}", *line);
}

void WorkerDesk::DropUnreading() {
  std::map<int64_t, std::pair<std::string, std::string>> unreading;
  unreading.swap(unreading_);
  for (const auto& [rank, what] : unreading) {
    if (!members_.Has(rank)) continue;
    const zmq::message_t& identity = members_.at(rank).identity;
    if (std::string(static_cast<const char*>(identity.data()), identity.size()) != what.first) {
      continue;
    }
    LoseWorker(rank, "it does not read its replies (" + what.second + ")");
  }
}

void WorkerDesk::CheckSilence() {
  const Clock::time_point now = Clock::now();
  shards_.CheckSilence(now, options_.worker_timeout);
  for (const Membership::Silent& silent : members_.SilentAt(now, options_.worker_timeout)) {
    LoseWorker(silent.rank, fmt::format("silent for {:g} s",
                                        std::chrono::duration<double>(silent.limit).count()));
  }
}

void WorkerDesk::LoseClosed() {
  for (const int64_t connection : endpoint_.TakeClosedConnections()) {
    const int64_t rank = members_.RankOfConnection(connection);
    if (rank >= 0) {
      LoseWorker(rank, "its connection closed");
    } else {
      shards_.LoseClosed(connection);
    }
  }
}

void WorkerDesk::Stop(const std::string& reason) {
  members_.ForEach([&](int64_t, Member& m) {
    Status sent = endpoint_.SendMessage(&m.identity, proto::Stop{reason});
    if (!sent.ok()) spdlog::debug("cannot stop {}:{}: {}", m.host, m.pid, sent.ToString());
  });
  // The other shards stop after the orders before: they save what those left.
  shards_.Stop(reason);
}

void WorkerDesk::RollBack(const std::string& why) {
  members_.ForEach([&](int64_t, Member& m) {
    Status sent = endpoint_.SendMessage(&m.identity, proto::Error{why, true, /*rejoin=*/true});
    if (!sent.ok()) spdlog::debug("cannot tell {}:{}: {}", m.host, m.pid, sent.ToString());
  });
  shards_.RollBack(why);
}

std::vector<sync::WorkerTotals> WorkerDesk::LogTotals(double seconds) {
  std::vector<sync::WorkerTotals> totals;
  members_.ForEach([&](int64_t rank, const Member& m) {
    if (m.totals.steps == 0) return;
    totals.push_back(m.totals);
    LogWorkerTotals(rank, m.totals, seconds);
  });
  return totals;
}

}  // namespace dmlps::server
