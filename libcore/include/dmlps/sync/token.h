// Token scheduling: Fela's elastic tuning (Geng et al., ICDE 2020).
#ifndef DMLPS_SYNC_TOKEN_H_
#define DMLPS_SYNC_TOKEN_H_

#include <vector>

#include "dmlps/sync/policy.h"

namespace dmlps::sync {

// An iteration's global batch B (= batch * N) is cut into T = ceil(B / size)
// tokens, dealt into one sub-bucket per worker (as evenly as possible). A
// worker's pull or push is answered with its next token (Grant, then
// ReplyModel at the start of an iteration or Continue within one). A worker
// whose own sub-bucket is empty helps the straggler (a worker with tokens
// left) that has the fewest helpers, then the slowest progress (fewest of
// its own tokens completed), then the lowest rank. With no token left to
// grant, the worker waits (Hold) until the iteration ends. Each completed
// token's gradient is staged with its samples; when all T are done the
// sample-weighted mean is applied, the buckets are refilled, and every
// waiting worker gets the new model with its first token.
class TokenPolicy : public Policy {
 public:
  // REQUIRES: batch >= 1, token_size >= 1.
  TokenPolicy(int64_t num_workers, int64_t batch, int64_t token_size);
  std::string Name() const override { return "token"; }
  int64_t iteration() const override { return round_; }

  int64_t tokens_per_iteration() const { return tokens_; }
  // Tokens worker w has completed over the whole run.
  int64_t completed(WorkerId w) const { return completed_total_[w]; }

 protected:
  void OnPush(WorkerId w, const PushInfo& push, Actions* out) override;
  bool MayStart(WorkerId w) const override;
  void BeforeReply(WorkerId w, Actions* out) override;
  void OnJoin(WorkerId w, const WorkerInfo& info, Actions* out) override;
  // The token it was training goes back to its bucket, which the others
  // then empty as helpers; workers waiting for a token get one now. From
  // the next iteration on, tokens are dealt to the live workers only.
  void OnLeave(WorkerId w, Actions* out) override;
  void OnAddWorker() override;
  void OnRestore(const PolicyState& state) override;

 private:
  // Deals the iteration's tokens into the live workers' buckets.
  void Deal();
  // The next token for w, taken out of a bucket, or -1 when none is left.
  int64_t TakeToken(WorkerId w);

  int64_t tokens_;
  int64_t round_ = 0;
  int64_t done_ = 0;  // tokens completed in this iteration
  int64_t staged_samples_ = 0;
  std::vector<std::vector<int64_t>> buckets_;  // per worker: token ids left
  std::vector<int64_t> in_flight_;             // per worker: token it trains, or -1
  std::vector<int64_t> owner_of_in_flight_;    // per worker: whose bucket that token came from
  std::vector<int64_t> helpers_;               // per worker: helpers it had this iteration
  std::vector<std::vector<bool>> helped_by_;   // [s][h]: h took a token of s this iteration
  std::vector<int64_t> own_done_;              // per worker: own tokens completed this iteration
  std::vector<bool> waiting_;                  // per worker: pushed, no token left, waits
  std::vector<int64_t> completed_total_;
};

}  // namespace dmlps::sync

#endif  // DMLPS_SYNC_TOKEN_H_
