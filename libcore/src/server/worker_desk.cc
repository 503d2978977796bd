#include "server/worker_desk.h"

#include <spdlog/spdlog.h>

#include <string>
#include <utility>

#include "dmlps/net/endpoint.h"
#include "server/loop.h"
#include "server/model_changes.h"
#include "server/run_report.h"

namespace dmlps::server {

using std::chrono::milliseconds;

WorkerDesk::WorkerDesk(const WorkerDeskOptions& options, net::Endpoint& endpoint,
                       ShardCoordinator& shards, sync::PolicyDriver<Gradient>& driver,
                       ModelStore& store, trace::TraceWriter* tracer, StartFn start,
                       Admissions::WelcomeFn welcome)
    : options_(options),
      endpoint_(endpoint),
      shards_(shards),
      driver_(driver),
      store_(store),
      tracer_(tracer),
      start_(std::move(start)),
      members_(options.workers, options.max_ranks, options.why_bounded),
      refusals_(endpoint, driver, members_, options.workers),
      pushes_(options.max_push_samples, shards, driver, store, members_, refusals_, tracer),
      admissions_(options.workers, options.layout, endpoint, shards, driver, members_, refusals_,
                  tracer, std::move(welcome),
                  [this](int64_t rank, const std::string& why) { LoseWorker(rank, why); }) {
  pushes_.set_codec(options.push_codec);
}

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

void WorkerDesk::HandleFrames(net::Frames& frames) {
  if (frames.size() < 2) {
    // A ROUTER always gives the identity first, so one frame means an empty message.
    if (!frames.empty())
      refusals_.Refuse(frames[0], "peer " + HexPrefix(frames[0]), "empty message", true);
    return;
  }
  zmq::message_t identity = net::CopyFrame(frames[0]);
  if (const int64_t shard = shards_.ShardOf(identity); shard >= 0) {
    Result<proto::Message> message = proto::DecodeMessage(frames, 1);
    if (!message.ok()) {
      refusals_.Refuse(identity, "server shard " + std::to_string(shard),
                       message.status().message(), false);
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
  if (!message.ok()) return refusals_.Refuse(identity, who, message.status().message(), rank < 0);
  if (rank < 0 && options_.peer && options_.peer(identity, *message)) return;
  proto::Body& body = message->body;
  if (auto* hello = std::get_if<proto::Hello>(&body)) {
    admissions_.TakeHello(identity, *hello, rank, who);
    return;
  }
  if (rank < 0 && shards_.Holds(identity)) {
    return;  // a worker waiting for its Welcome keeps itself alive
  }
  if (rank < 0) {
    // A worker of a server that restarted, or one declared lost: it may
    // Hello again.
    refusals_.Refuse(identity, who,
                     std::string(proto::MsgTypeName(proto::TypeOf(body))) + " before Hello", true,
                     /*rejoin=*/true);
    return;
  }
  Member& member = members_.at(rank);
  member.last_seen = Clock::now();
  member.totals.bytes_sent += wire_bytes;
  if (auto* pull = std::get_if<proto::Pull>(&body)) {
    HandlePull(rank, *pull);
  } else if (auto* push = std::get_if<proto::Push>(&body)) {
    pushes_.Push(rank, *push, message->payload);
  } else if (auto* chunk = std::get_if<proto::Chunk>(&body)) {
    pushes_.Chunk(rank, *chunk, message->payload);
  } else if (std::holds_alternative<proto::Heartbeat>(body)) {
    // Its arrival is all it says.
  } else if (auto* error = std::get_if<proto::Error>(&body)) {
    if (error->fatal) {
      LoseWorker(rank, "gave up: " + error->message);
    } else {
      spdlog::warn("worker {} reports: {}", rank, error->message);
    }
  } else {
    refusals_.Refuse(
        identity, who,
        "a worker may not send " + std::string(proto::MsgTypeName(proto::TypeOf(body))), false);
  }
}

void WorkerDesk::HandlePull(int64_t rank, const proto::Pull& pull) {
  Member& member = members_.at(rank);
  if (driver_.pull_pending(rank)) {
    refusals_.Refuse(member.identity, "worker " + std::to_string(rank), "a pull is already pending",
                     false);
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
    refusals_.Refuse(member.identity, "worker " + std::to_string(rank),
                     "pull for clock " + std::to_string(pull.clock) +
                         ", but the worker has pushed " +
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

void WorkerDesk::DrainStreams(milliseconds limit) {
  const Clock::time_point deadline = Clock::now() + limit;
  net::Frames frames;
  while (pushes_.streaming() && Clock::now() < deadline) {
    Result<bool> got = endpoint_.Receive(&frames, kPollSlice);
    if (!got.ok()) return;
    if (!*got || frames.size() < 2) continue;
    // Only the chunks matter now.
    const int64_t rank = members_.RankOf(frames[0]);
    if (rank < 0) continue;
    Result<proto::Message> message = proto::DecodeMessage(frames, 1);
    if (!message.ok()) continue;
    if (auto* chunk = std::get_if<proto::Chunk>(&message->body)) {
      pushes_.Chunk(rank, *chunk, message->payload);
    }
  }
}

void WorkerDesk::SendModel(int64_t rank, const sync::Reply& reply) {
  Member& member = members_.at(rank);
  if (reply.batch > 0) pushes_.GiveBatch(rank, reply.batch);
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
  auto failed = [this, rank, identity](const Status& why) {
    unreading_.emplace(rank, std::make_pair(identity, why.message()));
  };
  const std::string who = "worker " + std::to_string(rank);
  if (options_.pull_codec.kind != compress::Kind::kNone) {
    if (member.replica == nullptr) member.replica = std::make_shared<Replica>();
    QueueChangeReply(store_, endpoint_, member.identity, header, who, failed, digest,
                     options_.pull_codec, member.replica, model_bytes_);
  } else {
    QueueModelReply(store_, endpoint_, &member.identity, header, who, failed, digest);
    *model_bytes_ += store_.size() * static_cast<int64_t>(sizeof(float));
  }
  shards_.Order({proto::Order::kReply, rank, digest ? 1 : 0, static_cast<double>(header.version)});
}

void WorkerDesk::SendContinue(int64_t rank, bool download, const sync::Reply& reply) {
  Member& member = members_.at(rank);
  if (reply.batch > 0) pushes_.GiveBatch(rank, reply.batch);
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
    refusals_.Refuse(members_.at(rank).identity, "worker " + std::to_string(rank),
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
  pushes_.Forget(rank);
  members_.Remove(rank);
  shards_.Order({proto::Order::kForget, rank, 0, 0});
  const int64_t live = driver_.live_workers() - (driver_.active(rank) ? 1 : 0);
  if (!training()) {
    refusals_.NoteWhileWaiting(why, "lost " + who + " before training: " + why);
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
