// Shard 0's membership: which Hellos are admitted as which rank, which are
// refused and why, and which members count as silent.
#include "server/membership.h"

#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <vector>

namespace dmlps::server {
namespace {

zmq::message_t Identity(const std::string& name) {
  return zmq::message_t(name.data(), name.size());
}

proto::Hello HelloAsking(int64_t rank, int64_t max_batch = 0) {
  proto::Hello hello;
  hello.host = "worker-host";
  hello.pid = 42;
  hello.rank = rank;
  hello.max_batch = max_batch;
  return hello;
}

// Admits what Decide admits, as the server does (a new rank: the next one).
HelloDecision Join(Membership& members, const std::string& name, const proto::Hello& hello,
                   bool running) {
  HelloDecision decision = members.Decide(Identity(name), hello, running);
  if (decision.kind == HelloDecision::kNewRank) decision.rank = members.ranks();
  if (decision.kind == HelloDecision::kAdmit || decision.kind == HelloDecision::kNewRank) {
    members.Admit(decision.rank, Identity(name), hello, Clock::now());
  }
  return decision;
}

TEST_CASE("before training, a Hello gets the rank it asks for or the lowest free one") {
  Membership members(3);
  HelloDecision d = Join(members, "a", HelloAsking(2), false);
  CHECK(d.kind == HelloDecision::kAdmit);
  CHECK(d.rank == 2);
  d = Join(members, "b", HelloAsking(-1), false);
  CHECK(d.kind == HelloDecision::kAdmit);
  CHECK(d.rank == 0);
  CHECK(members.joined() == 2);
  CHECK(members.RankOf(Identity("b")) == 0);
  CHECK(members.RankOf(Identity("nobody")) == -1);
  CHECK(members.at(2).host == "worker-host");
  CHECK(members.at(2).pid == 42);

  // A repeated Hello is answered again with the same rank, whatever it asks.
  d = members.Decide(Identity("a"), HelloAsking(1), false);
  CHECK(d.kind == HelloDecision::kKnown);
  CHECK(d.rank == 2);
}

TEST_CASE("before training, a Hello is refused for a rank outside or taken, or a full cluster") {
  Membership members(2);
  REQUIRE(Join(members, "a", HelloAsking(1), false).kind == HelloDecision::kAdmit);
  auto refusal = [&](const proto::Hello& hello) {
    HelloDecision d = members.Decide(Identity("new"), hello, false);
    CHECK(d.kind == HelloDecision::kRefuse);
    return d.why;
  };
  CHECK(refusal(HelloAsking(1)) == "rank 1 is taken");
  CHECK(refusal(HelloAsking(2)) == "rank 2 is outside [0, 1]");
  CHECK(refusal(HelloAsking(-2)) == "rank -2 is outside [0, 1]");
  CHECK(refusal(HelloAsking(-1, -5)) == "a negative max_batch");
  CHECK(refusal(HelloAsking(-1, kMaxHelloBatch + 1)) ==
        "max_batch 2147483649 is beyond 2147483648");
  REQUIRE(Join(members, "b", HelloAsking(-1), false).rank == 0);
  CHECK(refusal(HelloAsking(-1)) == "the cluster is full (2 workers)");
}

TEST_CASE("a running job takes anyone: a free rank, else a new one") {
  Membership members(2);
  REQUIRE(Join(members, "a", HelloAsking(0), false).kind == HelloDecision::kAdmit);
  REQUIRE(Join(members, "b", HelloAsking(1), false).kind == HelloDecision::kAdmit);

  // Full: the policy adds a rank, whatever rank was asked for.
  HelloDecision d = Join(members, "c", HelloAsking(0), true);
  CHECK(d.kind == HelloDecision::kNewRank);
  CHECK(members.ranks() == 3);
  CHECK(members.Has(2));

  // A lost worker's rank is free again: asked for, it is given; else the lowest.
  members.Remove(0);
  members.Remove(1);
  CHECK(members.joined() == 1);
  CHECK(members.RankOf(Identity("a")) == -1);
  d = Join(members, "d", HelloAsking(1), true);
  CHECK(d.kind == HelloDecision::kAdmit);
  CHECK(d.rank == 1);
  d = Join(members, "e", HelloAsking(7), true);
  CHECK(d.kind == HelloDecision::kAdmit);
  CHECK(d.rank == 0);

  d = members.Decide(Identity("f"), HelloAsking(-2), true);
  CHECK(d.kind == HelloDecision::kRefuse);
  CHECK(d.why == "a negative rank or max_batch");
  d = members.Decide(Identity("f"), HelloAsking(-1, -1), true);
  CHECK(d.kind == HelloDecision::kRefuse);
  CHECK(d.why == "a negative rank or max_batch");
  d = members.Decide(Identity("f"), HelloAsking(-1, std::numeric_limits<int64_t>::max()), true);
  CHECK(d.kind == HelloDecision::kRefuse);
  CHECK(d.why == "max_batch 9223372036854775807 is beyond 2147483648");
  CHECK(members.Decide(Identity("f"), HelloAsking(-1, kMaxHelloBatch), true).kind !=
        HelloDecision::kRefuse);
}

TEST_CASE("a running job hands out at most kMaxRanks ranks") {
  Membership members(1);
  members.Admit(kMaxRanks - 1, Identity("last"), HelloAsking(-1), Clock::now());
  REQUIRE(members.ranks() == kMaxRanks);
  for (int64_t r = 0; r < kMaxRanks - 1; ++r) {
    members.Admit(r, Identity(std::to_string(r)), HelloAsking(-1), Clock::now());
  }
  HelloDecision d = members.Decide(Identity("one more"), HelloAsking(-1), true);
  CHECK(d.kind == HelloDecision::kRefuse);
  CHECK(d.why == "the job has 100000 ranks, the most it takes");
}

TEST_CASE("a member is silent past the timeout, or past the load allowance before its first pull") {
  Membership members(3);
  const Clock::time_point t0 = Clock::now();
  const std::chrono::milliseconds timeout(1000);
  for (int64_t r = 0; r < 3; ++r) {
    members.Admit(r, Identity(std::to_string(r)), HelloAsking(r), t0);
  }
  members.at(0).ready = true;
  members.at(2).ready = true;
  members.at(2).last_seen = t0 + std::chrono::seconds(5);
  CHECK(members.SilentAt(t0 + std::chrono::milliseconds(999), timeout).empty());

  std::vector<Membership::Silent> silent = members.SilentAt(t0 + timeout, timeout);
  REQUIRE(silent.size() == 1);
  CHECK(silent[0].rank == 0);
  CHECK(silent[0].limit == timeout);

  silent = members.SilentAt(t0 + kLoadAllowance + std::chrono::seconds(5), timeout);
  REQUIRE(silent.size() == 3);
  CHECK(silent[1].rank == 1);
  CHECK(silent[1].limit == kLoadAllowance);  // still loading its data
  CHECK(silent[2].rank == 2);

  // A timeout beyond the allowance holds for members still loading too.
  silent = members.SilentAt(t0 + std::chrono::minutes(2), std::chrono::minutes(2));
  REQUIRE(silent.size() == 2);
  CHECK(silent[1].limit == std::chrono::minutes(2));
}

TEST_CASE("members are visited in rank order") {
  Membership members(4);
  members.Admit(3, Identity("c"), HelloAsking(3), Clock::now());
  members.Admit(1, Identity("a"), HelloAsking(1), Clock::now());
  std::vector<int64_t> ranks;
  members.ForEach([&](int64_t rank, Member&) { ranks.push_back(rank); });
  CHECK(ranks == std::vector<int64_t>{1, 3});
}

TEST_CASE("a running job bounded to its ranks refuses joins beyond them, saying why") {
  // As under a robust rule (docs/security.md): the job of 2 takes no third.
  Membership members(2, 2, "no more under --aggregate median");
  REQUIRE(Join(members, "a", HelloAsking(-1), false).kind == HelloDecision::kAdmit);
  REQUIRE(Join(members, "b", HelloAsking(-1), false).kind == HelloDecision::kAdmit);
  const HelloDecision extra = Join(members, "c", HelloAsking(-1), true);
  CHECK(extra.kind == HelloDecision::kRefuse);
  CHECK(extra.why == "the job has 2 ranks, no more under --aggregate median");
  // A lost worker's rank may be taken again.
  members.Remove(0);
  const HelloDecision again = Join(members, "c", HelloAsking(-1), true);
  CHECK(again.kind == HelloDecision::kAdmit);
  CHECK(again.rank == 0);
  // Unbounded, the same job grows.
  Membership elastic(2);
  REQUIRE(Join(elastic, "a", HelloAsking(-1), false).kind == HelloDecision::kAdmit);
  REQUIRE(Join(elastic, "b", HelloAsking(-1), false).kind == HelloDecision::kAdmit);
  CHECK(Join(elastic, "c", HelloAsking(-1), true).kind == HelloDecision::kNewRank);
}

TEST_CASE("a member's CURVE key finds its rank; no key finds none") {
  Membership members(2);
  members.Admit(1, Identity("a"), HelloAsking(1), Clock::now(), {"KEY-A"});
  members.Admit(0, Identity("b"), HelloAsking(0), Clock::now());
  CHECK(members.RankOfKey("KEY-A") == 1);
  CHECK(members.RankOfKey("KEY-B") == -1);
  CHECK(members.RankOfKey("") == -1);
}

TEST_CASE("a closed connection finds the member that joined over it, and no other") {
  Membership members(3);
  members.Admit(0, Identity("a"), HelloAsking(0), Clock::now(), {"", 7});
  members.Admit(2, Identity("b"), HelloAsking(2), Clock::now(), {"", 9});
  members.Admit(1, Identity("c"), HelloAsking(1), Clock::now());  // connection unknown
  CHECK(members.RankOfConnection(9) == 2);
  CHECK(members.RankOfConnection(7) == 0);
  CHECK(members.RankOfConnection(8) == -1);
  CHECK(members.RankOfConnection(0) == -1);  // unknown is no one's
  members.Remove(2);
  CHECK(members.RankOfConnection(9) == -1);
}

TEST_CASE("a rank's samples add up over the members that held it, for the next one") {
  Membership members(2);
  CHECK(members.SamplesBefore(1) == 0);
  members.Admit(1, Identity("a"), HelloAsking(1), Clock::now());
  members.at(1).totals.samples = 640;
  members.Remove(1);
  CHECK(members.SamplesBefore(1) == 640);
  members.Admit(1, Identity("b"), HelloAsking(1), Clock::now());
  members.at(1).totals.samples = 64;
  members.Remove(1);
  CHECK(members.SamplesBefore(1) == 704);
  CHECK(members.SamplesBefore(0) == 0);
}

}  // namespace
}  // namespace dmlps::server
