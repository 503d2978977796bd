// Token scheduling: scripted event sequences, and a discrete-event driver in
// virtual time that plays the worker side, so that the invariants
// docs/algorithms-stragglers.md states ("Token scheduling") are checked on the schedules
// a slow worker actually produces.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dmlps/sync/policy.h"
#include "dmlps/sync/token.h"
#include "policy_cluster_test_util.h"
#include "policy_test_util.h"

namespace dmlps::sync::testing {
namespace {

// Plays the workers of a token run through a policy driver: each trains the
// token it was granted for step_time(w, samples) and pushes; its next token
// comes with a go-ahead (within an iteration) or the model (a new one); until
// then it waits.
class TokenCluster : private ScriptedCluster<int, TokenPolicy> {
 public:
  TokenCluster(int64_t n, int64_t batch, int64_t token_size, StepTime step_time)
      : ScriptedCluster(
            {.name = "token", .job = {.workers = n, .batch = batch}, .token_size = token_size}),
        step_time_(std::move(step_time)),
        global_batch_(batch * n),
        token_size_(token_size),
        workers_(n),
        replies_in_iteration_(n, 0) {
    CHECK(policy_->mode() == WorkerMode::kToken);
    for (WorkerId w = 0; w < n; ++w) driver_->Attach(w, {});
    driver_->Start();
  }

  using ScriptedCluster::policy;
  using ScriptedCluster::Run;
  int64_t applies() const { return applies_; }
  double now() const { return time_.now(); }

 private:
  struct Worker {
    int64_t token = -1;  // granted, not yet pushed
    int64_t base_version = 0;
    int64_t clock = 0;
    double busy_s = 0;
  };

  void StepEnded(WorkerId w) override {
    Worker& worker = workers_[w];
    REQUIRE(worker.token >= 0);
    CHECK(granted_.count(worker.token) == 1);
    CHECK(completed_.insert(worker.token).second);  // each token done once
    const int64_t samples = SamplesOf(worker.token);
    const PushInfo push{worker.clock++, worker.base_version, samples, true, samples, worker.busy_s};
    worker.token = -1;
    waiting_[w] = true;
    CHECK_FALSE(driver_->Push(w, push, 0).dropped);
    AfterEvent();
  }

  int64_t SamplesOf(int64_t token) const {
    return std::min(token_size_, global_batch_ - token * token_size_);
  }

  void Start(WorkerId w) {
    Worker& worker = workers_[w];
    REQUIRE(waiting_[w]);
    REQUIRE(worker.token >= 0);  // the Grant came first
    waiting_[w] = false;
    worker.busy_s = step_time_(w, SamplesOf(worker.token), worker.clock);
    time_.Start(w, worker.busy_s);
  }

  // A worker waiting for its answer (held) has no token.
  void AfterEvent() override {
    for (WorkerId w = 0; w < policy_->num_workers(); ++w) {
      if (waiting_[w]) CHECK(workers_[w].token < 0);
    }
  }

  // The token a reply carries.
  void TakeToken(WorkerId w, int64_t token) {
    CHECK(workers_[w].token < 0);
    CHECK(token >= 0);
    CHECK(token < policy_->tokens_per_iteration());
    CHECK(granted_.insert(token).second);  // never granted twice in an iteration
    workers_[w].token = token;
  }

  // The driver's sink.
  void Stage(const HandledPush<int>& /*push*/, double weight) override { staged_ += weight; }
  void Apply(double scale, bool with_optimizer, int64_t /*version*/) override {
    CHECK(with_optimizer);
    CHECK(scale == doctest::Approx(1.0 / staged_));
    CHECK(staged_ == doctest::Approx(static_cast<double>(global_batch_)));
    CHECK(static_cast<int64_t>(completed_.size()) == policy_->tokens_per_iteration());
    CHECK(granted_.size() == completed_.size());
    staged_ = 0;
    granted_.clear();
    completed_.clear();
    std::fill(replies_in_iteration_.begin(), replies_in_iteration_.end(), 0);
    ++applies_;
  }
  void SendModel(WorkerId w, const Reply& reply) override {
    TakeToken(w, reply.token);
    ++replies_in_iteration_[w];
    CHECK(replies_in_iteration_[w] == 1);  // one new model per iteration
    workers_[w].base_version = reply.version;
    Start(w);
  }
  void SendContinue(WorkerId w, bool download, const Reply& reply) override {
    TakeToken(w, reply.token);
    CHECK_FALSE(download);
    CHECK(workers_[w].base_version == policy_->version());
    Start(w);
  }

  StepTime step_time_;
  int64_t global_batch_;
  int64_t token_size_;
  std::vector<Worker> workers_;
  std::vector<int64_t> replies_in_iteration_;
  std::set<int64_t> granted_;
  std::set<int64_t> completed_;
  double staged_ = 0;
  int64_t applies_ = 0;
};

// Workers 0 to N - 1 join, then ask for the model; the actions go to *a.
void JoinAndPull(TokenPolicy* token, Actions* a) {
  for (WorkerId w = 0; w < token->num_workers(); ++w) token->WorkerJoined(w, a);
  for (WorkerId w = 0; w < token->num_workers(); ++w) token->PullRequested(w, a);
}

// Pushes worker w's token (the one it holds) and returns the actions.
Actions PushToken(Policy* policy, WorkerId w, int64_t samples = 16) {
  return PushActions(policy, w, {policy->clock(w), policy->version(), samples, true, samples, 1.0});
}

// The token granted in `a`, or -1.
int64_t GrantedToken(const Actions& a, WorkerId w) {
  const Grant* grant = Find<Grant>(a, w);
  return grant == nullptr ? -1 : grant->token;
}

TEST_CASE(
    "token: tokens dealt evenly; a pull gets a token and the model; MakePolicy checks the size") {
  TokenPolicy token(3, 10, 4);  // B = 30: 8 tokens, 3 + 3 + 2
  CHECK(token.Name() == "token");
  CHECK(token.tokens_per_iteration() == 8);
  Actions a;
  JoinAndPull(&token, &a);
  REQUIRE(a.size() == 6);
  for (WorkerId w = 0; w < 3; ++w) {
    CHECK(Is<Grant>(a[2 * w]));  // the token travels with the model
    CHECK(Is<ReplyModel>(a[2 * w + 1]));
  }
  CHECK(GrantedToken(a, 0) == 0);
  CHECK(GrantedToken(a, 1) == 3);
  CHECK(GrantedToken(a, 2) == 6);

  PolicyConfig config{.name = "token", .job = {.workers = 2, .batch = 8}, .token_size = 0};
  CHECK_FALSE(MakePolicy(config).ok());
  config.token_size = 17;
  CHECK_FALSE(MakePolicy(config).ok());
  config.token_size = 16;
  CHECK(MakePolicy(config).ok());
}

TEST_CASE("token: helpers go to the straggler with the fewest helpers, then the least progress") {
  // B = 192 in 12 tokens: worker 0 has 0-2, 1 has 3-5, 2 has 6-8, 3 has 9-11.
  TokenPolicy token(4, 48, 16);
  Actions a;
  JoinAndPull(&token, &a);

  a = PushToken(&token, 1);  // worker 1 has made progress
  CHECK(GrantedToken(a, 1) == 4);
  CHECK(Find<Continue>(a, 1) != nullptr);
  CHECK(GrantedToken(PushToken(&token, 0), 0) == 1);
  CHECK(GrantedToken(PushToken(&token, 0), 0) == 2);
  // Own bucket empty; nobody has helpers; 2 and 3 have done nothing of their
  // own, 1 has: worker 2 (the lower rank of the two), from its far end.
  a = PushToken(&token, 0);
  CHECK(GrantedToken(a, 0) == 8);
  CHECK(Find<Continue>(a, 0) != nullptr);

  CHECK(GrantedToken(PushToken(&token, 3), 3) == 10);
  CHECK(GrantedToken(PushToken(&token, 3), 3) == 11);
  // Worker 2 is slower than 1 but has a helper already: worker 1 gets this one.
  CHECK(GrantedToken(PushToken(&token, 3), 3) == 5);
  // 1's bucket is empty now; worker 0 goes on helping 2.
  CHECK(GrantedToken(PushToken(&token, 0), 0) == 7);

  // Nothing left to grant: each is held, until the last token is in.
  for (WorkerId w : {1, 2, 3}) {
    a = PushToken(&token, w);
    REQUIRE(a.size() == 2);
    CHECK(Is<Stage>(a[0]));
    CHECK(Is<Hold>(a[1]));
  }
  a = PushToken(&token, 0);
  CHECK(Count<Stage>(a) == 1);
  const Apply* apply = Find<Apply>(a);
  REQUIRE(apply != nullptr);
  CHECK(apply->scale == doctest::Approx(1.0 / 192));
  CHECK(token.iteration() == 1);
  // Everyone starts the next iteration on its own first token.
  for (WorkerId w = 0; w < 4; ++w) {
    CHECK(CountFor<ReplyModel>(a, w) == 1);
    CHECK(GrantedToken(a, w) == 3 * w);
  }
  CHECK(token.completed(0) == 5);
  CHECK(token.completed(2) == 1);
  CHECK(token.completed(1) == 2);
  CHECK(token.completed(3) == 4);
}

TEST_CASE("token: a helper that comes back to a straggler is one helper, not two") {
  // B = 256 in 16 tokens: worker w has 4w to 4w + 3.
  TokenPolicy token(4, 64, 16);
  Actions a;
  JoinAndPull(&token, &a);
  CHECK(GrantedToken(PushToken(&token, 2), 2) == 9);
  CHECK(GrantedToken(PushToken(&token, 3), 3) == 13);
  for (int64_t next : {1, 2, 3}) CHECK(GrantedToken(PushToken(&token, 0), 0) == next);
  // Worker 0 helps each straggler once: 1 (no progress), then 2 and 3 (no
  // helpers yet), then 1 again (all have one helper; 1 the least progress).
  for (int64_t next : {7, 11, 15, 6}) CHECK(GrantedToken(PushToken(&token, 0), 0) == next);
  // Worker 1 still has one helper, so it stays the choice.
  CHECK(GrantedToken(PushToken(&token, 0), 0) == 5);
}

TEST_CASE("token: a worker with nothing to do is held and answered once when the iteration ends") {
  TokenPolicy token(2, 16, 16);  // one token each
  Actions a;
  JoinAndPull(&token, &a);
  a = PushToken(&token, 0);
  REQUIRE(a.size() == 2);
  CHECK(Is<Hold>(a[1]));
  CHECK(WorkerOf(a[1]) == 0);
  // A held worker that asks again (say, after a reconnect) is held too ...
  a.clear();
  token.PullRequested(0, &a);
  REQUIRE(a.size() == 1);
  CHECK(Is<Hold>(a[0]));
  // ... and still gets one answer, with one token.
  a = PushToken(&token, 1);
  CHECK(Count<Apply>(a) == 1);
  CHECK(CountFor<ReplyModel>(a, 0) == 1);
  CHECK(CountFor<Grant>(a, 0) == 1);
  CHECK(CountFor<ReplyModel>(a, 1) == 1);
  CHECK(CountFor<Grant>(a, 1) == 1);
  CHECK(IndexOf<Grant>(a, 0) < IndexOf<ReplyModel>(a, 0));
  CHECK(IndexOf<Apply>(a) < IndexOf<Grant>(a, 0));  // the model sent is the new one

  // A push with no token in flight is a protocol error, not a completion.
  a = PushToken(&token, 0);  // completes its token and waits
  CHECK(CountFor<Hold>(a, 0) == 1);
  CHECK(OnlyDrop(PushToken(&token, 0)).reason.find("token") != std::string::npos);
}

TEST_CASE("token: with fewer tokens than workers, a pull waits and the iteration ends once") {
  TokenPolicy token(3, 1, 2);  // B = 3 in 2 tokens: worker 2's bucket is empty
  CHECK(token.tokens_per_iteration() == 2);
  Actions a;
  JoinAndPull(&token, &a);
  CHECK(GrantedToken(a, 0) == 0);
  CHECK(GrantedToken(a, 1) == 1);
  CHECK(CountFor<Hold>(a, 2) == 1);
  a = PushToken(&token, 0, 2);
  CHECK(CountFor<Hold>(a, 0) == 1);
  a = PushToken(&token, 1, 1);  // the short last token
  const Apply* apply = Find<Apply>(a);
  REQUIRE(apply != nullptr);
  CHECK(apply->scale == doctest::Approx(1.0 / 3));
  // Two tokens for three waiting workers: two answered, once each, the held
  // pull first; worker 2 helps 0, and 0 helps 1.
  CHECK(Count<ReplyModel>(a) == 2);
  CHECK(Count<Grant>(a) == 2);
  CHECK(GrantedToken(a, 2) == 0);
  CHECK(GrantedToken(a, 0) == 1);
  CHECK(CountFor<ReplyModel>(a, 1) == 0);
  // Worker 1 waits out this iteration and starts the next.
  a = PushToken(&token, 2, 2);
  CHECK(CountFor<Hold>(a, 2) == 1);
  a = PushToken(&token, 0, 1);
  CHECK(Count<Apply>(a) == 1);
  CHECK(CountFor<ReplyModel>(a, 1) == 1);
  CHECK(CountFor<ReplyModel>(a, 0) == 1);
  CHECK(CountFor<ReplyModel>(a, 2) == 0);
}

TEST_CASE(
    "token driver: a 4x faster worker trains about 4x the tokens; every token once per iteration") {
  TokenCluster driver(4, 64, 4, Linear(kOneSlow, 0.0002));
  driver.Run(200);
  CHECK(driver.applies() == 200);
  const TokenPolicy& token = driver.policy();
  CHECK(token.tokens_per_iteration() == 64);
  int64_t total = 0;
  for (WorkerId w = 0; w < 4; ++w) total += token.completed(w);
  CHECK(total == 200 * 64);
  for (WorkerId fast = 0; fast < 3; ++fast) {
    const double ratio =
        static_cast<double>(token.completed(fast)) / static_cast<double>(token.completed(3));
    CAPTURE(ratio);
    CHECK(ratio >= 3);
    CHECK(ratio <= 5);
  }
  // Nobody waits out the straggler: an iteration takes about B / (total
  // speed) = 256 samples / 3250 samples/s, not the 256 ms BSP would take.
  CHECK(driver.now() / 200 < 0.120);
}

TEST_CASE("token driver: equal workers share the tokens equally") {
  TokenCluster driver(3, 32, 8, Linear({0.001, 0.001, 0.001}));
  driver.Run(50);
  CHECK(driver.applies() == 50);
  for (WorkerId w = 0; w < 3; ++w) CHECK(driver.policy().completed(w) == 50 * 4);
}

}  // namespace
}  // namespace dmlps::sync::testing
