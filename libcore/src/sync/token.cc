#include "dmlps/sync/token.h"

#include <algorithm>
#include <tuple>

namespace dmlps::sync {
namespace {

// Deals token ids 0..tokens-1 into one bucket per worker in contiguous runs,
// the first tokens % n workers getting one more. Each bucket holds its ids
// highest first, so its owner takes the lowest from the back and helpers take
// the highest from the front, the ones the owner would reach last.
// Only the workers `live` marks get tokens (all, when none is marked).
void DealTokens(int64_t tokens, const std::vector<bool>& live,
                std::vector<std::vector<int64_t>>* buckets) {
  const auto marked = static_cast<int64_t>(std::count(live.begin(), live.end(), true));
  const bool everyone = marked == 0;
  const int64_t n = everyone ? static_cast<int64_t>(buckets->size()) : marked;
  int64_t next = 0;
  int64_t i = 0;  // the live worker's place among the live
  for (size_t w = 0; w < buckets->size(); ++w) {
    std::vector<int64_t>& bucket = (*buckets)[w];
    bucket.clear();
    if (!everyone && !live[w]) continue;
    const int64_t count = tokens / n + (i < tokens % n ? 1 : 0);
    for (int64_t k = count - 1; k >= 0; --k) bucket.push_back(next + k);
    next += count;
    ++i;
  }
}

}  // namespace

TokenPolicy::TokenPolicy(int64_t num_workers, int64_t batch, int64_t token_size)
    : Policy(num_workers),
      tokens_((batch * num_workers + token_size - 1) / token_size),
      buckets_(num_workers),
      in_flight_(num_workers, -1),
      owner_of_in_flight_(num_workers, -1),
      helpers_(num_workers, 0),
      helped_by_(num_workers, std::vector<bool>(num_workers, false)),
      own_done_(num_workers, 0),
      waiting_(num_workers, false),
      completed_total_(num_workers, 0) {
  Deal();
}

void TokenPolicy::Deal() {
  std::vector<bool> live(static_cast<size_t>(num_workers()));
  for (WorkerId w = 0; w < num_workers(); ++w) live[w] = joined(w);
  DealTokens(tokens_, live, &buckets_);
}

void TokenPolicy::OnJoin(WorkerId w, const WorkerInfo& /*info*/, Actions* /*out*/) {
  // A newcomer helps until the next deal gives it a bucket of its own.
  in_flight_[w] = -1;
  owner_of_in_flight_[w] = -1;
  waiting_[w] = false;
}

void TokenPolicy::OnLeave(WorkerId w, Actions* out) {
  if (in_flight_[w] >= 0) {
    // Helpers take from the front.
    std::vector<int64_t>& bucket = buckets_[owner_of_in_flight_[w]];
    bucket.insert(bucket.begin(), in_flight_[w]);
    in_flight_[w] = -1;
    owner_of_in_flight_[w] = -1;
  }
  waiting_[w] = false;
  // Held pulls first, then pushes waiting for an answer, as at an iteration's end.
  ReleaseHeld(out);
  for (WorkerId v = 0; v < num_workers(); ++v) {
    if (!joined(v) || !waiting_[v] || in_flight_[v] >= 0) continue;
    const int64_t token = TakeToken(v);
    if (token < 0) break;
    waiting_[v] = false;
    out->push_back(Grant{v, token});
    out->push_back(Continue{v, false});
  }
}

void TokenPolicy::OnAddWorker() {
  buckets_.emplace_back();
  in_flight_.push_back(-1);
  owner_of_in_flight_.push_back(-1);
  helpers_.push_back(0);
  for (std::vector<bool>& row : helped_by_) row.push_back(false);
  helped_by_.emplace_back(static_cast<size_t>(num_workers()), false);
  own_done_.push_back(0);
  waiting_.push_back(false);
  completed_total_.push_back(0);
}

void TokenPolicy::OnRestore(const PolicyState& state) { round_ = state.iteration; }

bool TokenPolicy::MayStart(WorkerId w) const {
  // A worker that asks again while training a token is sent that token again.
  if (in_flight_[w] >= 0) return true;
  return std::any_of(buckets_.begin(), buckets_.end(),
                     [](const std::vector<int64_t>& bucket) { return !bucket.empty(); });
}

void TokenPolicy::BeforeReply(WorkerId w, Actions* out) {
  // MayStart has promised a token.
  if (in_flight_[w] < 0 && TakeToken(w) < 0) return;
  waiting_[w] = false;
  out->push_back(Grant{w, in_flight_[w]});
}

int64_t TokenPolicy::TakeToken(WorkerId w) {
  WorkerId owner = w;
  if (buckets_[w].empty()) {
    // Fela's HF choice: the straggler with the fewest helpers, then the least
    // progress of its own, then the lowest rank.
    owner = -1;
    for (WorkerId s = 0; s < num_workers(); ++s) {
      if (s == w || buckets_[s].empty()) continue;
      if (owner < 0 ||
          std::tie(helpers_[s], own_done_[s]) < std::tie(helpers_[owner], own_done_[owner])) {
        owner = s;
      }
    }
    if (owner < 0) return -1;
  }
  std::vector<int64_t>& bucket = buckets_[owner];
  int64_t token;
  if (owner == w) {
    token = bucket.back();
    bucket.pop_back();
  } else {
    token = bucket.front();
    bucket.erase(bucket.begin());
    if (!helped_by_[owner][w]) {
      helped_by_[owner][w] = true;
      ++helpers_[owner];
    }
  }
  in_flight_[w] = token;
  owner_of_in_flight_[w] = owner;
  return token;
}

void TokenPolicy::OnPush(WorkerId w, const PushInfo& push, Actions* out) {
  if (in_flight_[w] < 0) {
    out->push_back(Drop{.worker = w,
                        .reason = "push with no token in flight (round " + std::to_string(round_) +
                                  "); a worker pushes once per granted token"});
    return;
  }
  if (push.usable && push.samples > 0) {
    out->push_back(Stage{w, static_cast<double>(push.samples)});
    staged_samples_ += push.samples;
  }
  if (owner_of_in_flight_[w] == w) ++own_done_[w];
  in_flight_[w] = -1;
  owner_of_in_flight_[w] = -1;
  ++completed_total_[w];
  ++done_;

  if (done_ < tokens_) {
    const int64_t token = TakeToken(w);
    if (token >= 0) {
      out->push_back(Grant{w, token});
      out->push_back(Continue{w, false});
    } else {
      // Every token left is in flight elsewhere: the answer to this push
      // waits for the iteration's end.
      waiting_[w] = true;
      out->push_back(Hold{w});
    }
    return;
  }

  // The iteration's last token: the sample-weighted mean of all of them.
  if (staged_samples_ > 0) EmitApply(1.0 / static_cast<double>(staged_samples_), out);
  ++round_;
  done_ = 0;
  staged_samples_ = 0;
  Deal();
  std::fill(helpers_.begin(), helpers_.end(), 0);
  for (std::vector<bool>& row : helped_by_) std::fill(row.begin(), row.end(), false);
  std::fill(own_done_.begin(), own_done_.end(), 0);
  waiting_[w] = true;
  // Held pulls first, then the pushes waiting for an answer. A worker that
  // has both is answered once: the first reply puts a token in flight, and
  // the loop below skips workers with one.
  ReleaseHeld(out);
  for (WorkerId v = 0; v < num_workers(); ++v) {
    if (!waiting_[v] || in_flight_[v] >= 0 || !joined(v)) continue;
    const int64_t token = TakeToken(v);
    if (token < 0) break;  // fewer tokens than workers: the rest wait a round
    waiting_[v] = false;
    out->push_back(Grant{v, token});
    out->push_back(ReplyModel{v});
  }
}

}  // namespace dmlps::sync
