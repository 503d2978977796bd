#include "server/membership.h"

#include <algorithm>
#include <string>
#include <utility>

#include "dmlps/net/endpoint.h"

namespace dmlps::server {

namespace {

HelloDecision TooLargeBatch(int64_t max_batch) {
  return {
      HelloDecision::kRefuse, -1,
      "max_batch " + std::to_string(max_batch) + " is beyond " + std::to_string(kMaxHelloBatch)};
}

}  // namespace

HelloDecision Membership::Decide(const zmq::message_t& identity, const proto::Hello& hello,
                                 bool running) const {
  if (const int64_t rank = RankOf(identity); rank >= 0) {
    return {HelloDecision::kKnown, rank, ""};  // a repeated Hello gets the same answer again
  }
  return running ? DecideRunning(hello) : DecideAssembling(hello);
}

HelloDecision Membership::DecideRunning(const proto::Hello& hello) const {
  if (hello.max_batch < 0 || hello.rank < -1) {
    return {HelloDecision::kRefuse, -1, "a negative rank or max_batch"};
  }
  if (hello.max_batch > kMaxHelloBatch) return TooLargeBatch(hello.max_batch);
  if (hello.rank >= 0 && hello.rank < ranks() && !Has(hello.rank)) {
    return {HelloDecision::kAdmit, hello.rank, ""};
  }
  for (int64_t r = 0; r < ranks(); ++r) {
    if (!Has(r)) return {HelloDecision::kAdmit, r, ""};
  }
  if (ranks() >= max_ranks_) {
    return {HelloDecision::kRefuse, -1,
            "the job has " + std::to_string(ranks()) + " ranks, " + why_bounded_};
  }
  return {HelloDecision::kNewRank, -1, ""};
}

HelloDecision Membership::DecideAssembling(const proto::Hello& hello) const {
  if (joined_ >= workers_) {
    return {HelloDecision::kRefuse, -1,
            "the cluster is full (" + std::to_string(workers_) + " workers)"};
  }
  if (hello.rank >= workers_ || hello.rank < -1) {
    return {HelloDecision::kRefuse, -1,
            "rank " + std::to_string(hello.rank) + " is outside [0, " +
                std::to_string(workers_ - 1) + "]"};
  }
  int64_t rank = hello.rank;
  if (rank >= 0 && Has(rank)) {
    return {HelloDecision::kRefuse, -1, "rank " + std::to_string(rank) + " is taken"};
  }
  // None asked for: the lowest free rank (there is one, the cluster not being full).
  for (int64_t r = 0; r < workers_ && rank < 0; ++r) {
    if (!Has(r)) rank = r;
  }
  if (hello.max_batch < 0) return {HelloDecision::kRefuse, -1, "a negative max_batch"};
  if (hello.max_batch > kMaxHelloBatch) return TooLargeBatch(hello.max_batch);
  return {HelloDecision::kAdmit, rank, ""};
}

void Membership::Admit(int64_t rank, const zmq::message_t& identity, const proto::Hello& hello,
                       Clock::time_point now, const net::Sender& sender) {
  if (rank >= ranks()) members_.resize(static_cast<size_t>(rank) + 1);
  Member member;
  member.identity = net::CopyFrame(identity);
  member.host = hello.host;
  member.pid = hello.pid;
  member.key = sender.key;
  member.connection = sender.connection;
  member.last_seen = now;
  members_[static_cast<size_t>(rank)] = std::move(member);
  rank_of_[IdentityKey(identity)] = rank;
  ++joined_;
}

void Membership::Remove(int64_t rank) {
  samples_before_[rank] += at(rank).totals.samples;
  rank_of_.erase(IdentityKey(at(rank).identity));
  members_[static_cast<size_t>(rank)].reset();
  --joined_;
}

int64_t Membership::RankOf(const zmq::message_t& identity) const {
  auto it = rank_of_.find(IdentityKey(identity));
  return it == rank_of_.end() ? -1 : it->second;
}

int64_t Membership::RankOfKey(const std::string& key) const {
  if (key.empty()) return -1;
  for (size_t r = 0; r < members_.size(); ++r) {
    if (members_[r].has_value() && members_[r]->key == key) return static_cast<int64_t>(r);
  }
  return -1;
}

int64_t Membership::RankOfConnection(int64_t connection) const {
  if (connection == 0) return -1;
  for (size_t r = 0; r < members_.size(); ++r) {
    if (members_[r].has_value() && members_[r]->connection == connection) {
      return static_cast<int64_t>(r);
    }
  }
  return -1;
}

std::vector<Membership::Silent> Membership::SilentAt(Clock::time_point now,
                                                     std::chrono::milliseconds timeout) const {
  std::vector<Silent> silent;
  for (size_t r = 0; r < members_.size(); ++r) {
    const std::optional<Member>& m = members_[r];
    if (!m.has_value()) continue;
    const std::chrono::milliseconds limit = m->ready ? timeout : std::max(timeout, kLoadAllowance);
    if (now - m->last_seen >= limit) silent.push_back({static_cast<int64_t>(r), limit});
  }
  return silent;
}

}  // namespace dmlps::server
