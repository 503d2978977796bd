// Shard 0's workers: who holds which rank, whether a Hello is admitted and
// as which rank, and who has gone silent. It decides; the server carries
// the decisions out on the wire and tells the policy driver.
#ifndef DMLPS_SERVER_MEMBERSHIP_H_
#define DMLPS_SERVER_MEMBERSHIP_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "dmlps/net/endpoint.h"
#include "dmlps/proto/codec.h"
#include "dmlps/sync/summary.h"
#include "server/loop.h"

namespace dmlps::server {

// A worker loading its data sends nothing: before its first pull it is
// given at least this long.
inline constexpr std::chrono::milliseconds kLoadAllowance{60000};
// The most ranks a running job hands out.
inline constexpr int64_t kMaxRanks = 100000;
// The largest max_batch a Hello may offer (2^31 samples): beyond any batch a
// worker can hold, and small enough that sums of the workers' caps cannot
// overflow.
inline constexpr int64_t kMaxHelloBatch = int64_t{1} << 31;

struct Replica;  // server/model_changes.h

// A worker holding a rank.
struct Member {
  zmq::message_t identity;
  std::string host;
  int64_t pid = 0;
  std::string key;               // its CURVE public key (Z85); empty without CURVE
  int64_t connection = 0;        // the connection it joined over; 0: unknown
  bool ready = false;            // it pulled once: its data is loaded
  bool digest_sent = false;      // its first model went with a digest (WorkerDesk::SendModel)
  Clock::time_point last_seen;   // when it was last heard from
  Clock::time_point replied_at;  // when the last model reply was queued; epoch: none yet
  sync::WorkerTotals totals;     // what it reported, for the closing summary
  // Under a pull codec: the model as it holds it (WorkerDesk::SendModel);
  // null until its first model is queued.
  std::shared_ptr<Replica> replica;
};

// What to do with a Hello.
struct HelloDecision {
  enum Kind {
    kKnown,    // a repeated Hello from a member: welcome it again as `rank`
    kAdmit,    // admit the sender as `rank`, a free one
    kNewRank,  // admit the sender as a rank the policy adds (a running job is full)
    kRefuse,   // refuse the sender for good: `why`
  };
  Kind kind = kRefuse;
  int64_t rank = -1;
  std::string why;
};

class Membership {
 public:
  // A job of `workers` ranks to fill before training starts, which may grow
  // to `max_ranks` while it runs (at most kMaxRanks). `why_bounded` says
  // why a Hello beyond them is refused.
  explicit Membership(int64_t workers, int64_t max_ranks = kMaxRanks,
                      std::string why_bounded = "the most it takes")
      : workers_(workers),
        max_ranks_(std::min(max_ranks, kMaxRanks)),
        why_bounded_(std::move(why_bounded)),
        members_(workers) {}

  // Decides on the Hello of `identity`. Before training (`running` false)
  // the rank asked for must lie within the job and be free, and the cluster
  // must not be full; a running job takes anyone: the rank asked for when
  // it is free, else the lowest free one, else a new one, up to max_ranks.
  HelloDecision Decide(const zmq::message_t& identity, const proto::Hello& hello,
                       bool running) const;
  // Makes the sender of `hello` the member of `rank` (a new rank: the ranks
  // grow to hold it), heard from at `now`, over `sender`'s connection with
  // its CURVE key (empty: none).
  void Admit(int64_t rank, const zmq::message_t& identity, const proto::Hello& hello,
             Clock::time_point now, const net::Sender& sender = {});
  // Forgets the member of `rank`; its rank is free again.
  void Remove(int64_t rank);
  // The samples the members of `rank` that were removed processed, all
  // together (Member::totals): where a new member of the rank goes on.
  int64_t SamplesBefore(int64_t rank) const {
    auto it = samples_before_.find(rank);
    return it == samples_before_.end() ? 0 : it->second;
  }

  // The rank of the member `identity`, or -1 when it is none.
  int64_t RankOf(const zmq::message_t& identity) const;
  // The rank of the member whose CURVE key is `key`, or -1 (always for an
  // empty key).
  int64_t RankOfKey(const std::string& key) const;
  // The rank of the member that joined over connection `connection`
  // (Endpoint::LastSenderConnection), or -1 (always for 0, unknown).
  int64_t RankOfConnection(int64_t connection) const;
  bool Has(int64_t rank) const {
    return rank >= 0 && rank < ranks() && members_[static_cast<size_t>(rank)].has_value();
  }
  // REQUIRES: Has(rank).
  Member& at(int64_t rank) { return *members_[static_cast<size_t>(rank)]; }
  // Ranks handed out so far, free ones included.
  int64_t ranks() const { return static_cast<int64_t>(members_.size()); }
  // Members now.
  int64_t joined() const { return joined_; }

  // The members silent at `now` for longer than their limit (`timeout`, or
  // kLoadAllowance when longer, before a member's first pull), in rank
  // order, with the limit each passed.
  struct Silent {
    int64_t rank;
    std::chrono::milliseconds limit;
  };
  std::vector<Silent> SilentAt(Clock::time_point now, std::chrono::milliseconds timeout) const;

  // Calls fn(rank, member) for every member, in rank order.
  template <typename Fn>
  void ForEach(Fn&& fn) {
    for (size_t r = 0; r < members_.size(); ++r) {
      if (members_[r].has_value()) fn(static_cast<int64_t>(r), *members_[r]);
    }
  }

 private:
  HelloDecision DecideRunning(const proto::Hello& hello) const;
  HelloDecision DecideAssembling(const proto::Hello& hello) const;

  const int64_t workers_;
  const int64_t max_ranks_;
  const std::string why_bounded_;
  std::vector<std::optional<Member>> members_;  // by rank
  std::map<std::string, int64_t> rank_of_;      // identity bytes -> rank
  std::map<int64_t, int64_t> samples_before_;   // rank -> SamplesBefore
  int64_t joined_ = 0;
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_MEMBERSHIP_H_
