// The auto policy: SwitchingPolicy under a decider that measures the
// workers live (the times every push carries) and asks the advise engine
// (advise::Advisor) at round boundaries whether another candidate policy
// would reach the target sooner, switching only when the predicted saving
// over the rest of the run pays for the switch (docs/auto.md). It sits
// above the policies, the simulator and advise: the programs that run
// policies make it through MakePolicy below, their sync::PolicyFactory.
#ifndef DMLPS_AUTO_AUTO_H_
#define DMLPS_AUTO_AUTO_H_

#include <array>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dmlps/advise/advisor.h"
#include "dmlps/advise/efficiency.h"
#include "dmlps/auto/env.h"
#include "dmlps/auto/shared_cores.h"
#include "dmlps/auto/worker_steps.h"
#include "dmlps/sync/switching.h"

namespace dmlps::autopolicy {

using sync::Decision;
using sync::Policy;
using sync::PolicyConfig;
using sync::PushInfo;
using sync::SwitchContext;
using sync::SwitchRequest;
using sync::WorkerId;
using sync::WorkerInfo;

// auto's name, its row's in sync/registry.h.
inline constexpr std::string_view kAutoPolicy = "auto";

// The candidates auto runs when none are given (docs/auto.md,
// "Candidates" and "The start"): those of advise's default list that it
// can switch into live and that fit `num_workers` (backup:1 needs two),
// backup:1 first from three workers, else bsp; after bsp, backup:B for
// 2 <= B < `num_workers` where `table` (the job's) was learned on
// `num_workers` and has a row of backup:B's own; and the table's
// auto_start first where it names one of them.
std::vector<std::string> AutoCandidates(int64_t num_workers, const advise::EfficiencyTable& table);

// Whether auto can run `entry` ("ssp:3", as dmlps-bench names policies):
// InvalidArgument, one line, for one that names no policy or whose workers
// run in another mode (wbsp, abps, token, the local-SGD policies), since a
// worker learns its mode once, when it joins (sync::CheckSwitchCandidate).
Status CheckAutoCandidate(std::string_view entry, int64_t num_workers, int64_t batch);

// The speedup a switch from `running` into `to` must be predicted:
// 1 / (1 - AutoDecider::kMinGain), or AutoDecider::kIntoBsp into the
// reference policy from another, times AutoDecider::kReturnBar to the
// power `returns`: the how-manieth return this switch would be, counting
// it, where it goes back into a policy the run left before on shared cores
// (0 where it does not). docs/auto.md, "How it decides".
double AutoSwitchBar(std::string_view running, std::string_view to, int returns);

// How much of the wall clock auto's predictions may take where they take
// a core from the workers (in the background): new ones start only while
// those so far took at most `share` of the time since the run's first
// push plus `allowance_ms`, which the first decisions spend, while the
// run is uninformed. A share of 0: no bound.
class PredictionBudget {
 public:
  PredictionBudget(double share, double allowance_ms)
      : share_(share), allowance_ms_(allowance_ms) {}
  // Whether predictions may start `now_ms` after the run's first push.
  bool Allows(double now_ms) const {
    return share_ <= 0 || spent_ms_ <= allowance_ms_ + share_ * now_ms;
  }
  void Spend(double ms) { spent_ms_ += ms; }
  double spent_ms() const { return spent_ms_; }

 private:
  double share_;
  double allowance_ms_;
  double spent_ms_ = 0;
};

// Decides for SwitchingPolicy (docs/auto.md, "When it decides" and "How it
// decides"). Per worker it keeps the last kWindow measured steps
// (WorkerSteps): time per sample of computing, the time beyond it, the
// share of it that had a core, and lasting changes of speed
// (predict::FindLastingChanges on lower quartiles, so that transient delays
// are none). It decides at the first
// round boundary once every live worker has kMinSteps measured steps since
// its last lasting change, then every Options::every iterations, and
// sooner, but kMinGap after the last decision, once a lasting change has
// kMinSteps steps behind it. A decision builds a cluster profile
// (docs/auto-readings.md), has the Advisor predict every candidate, and
// switches to its recommendation when that clears AutoSwitchBar and the
// time saved over the rest of the run (Remaining) exceeds kPayback times
// the switch's cost (the slowest worker's step plus one iteration of the
// new policy); a gain under kConfirmBelow waits, after the first decision
// (or at it on shared cores or on few delayed steps), until one of the next
// two decisions chooses it again for the same kind of cause. In the
// background (Options::background) the predictions run on the Env's
// thread and the first round boundary after they are in chooses; no other
// decision starts meanwhile, nor beyond PredictionBudget.
//
// A worker whose last kMinSteps pushes, or more, report a step time it
// cannot read (Readable) is left out of the profile, its decisions saying
// so, rather than holding them all back; the first time, a warning says
// why. On shared cores (once a decision read them so, for the rest of the
// run, at the fewest read: SharedCores) a switch back into a policy the run
// left before must clear kReturnBar times the bar, each further return
// kReturnBar times more (docs/auto-readings.md, "Shared cores").
class AutoDecider : public sync::SwitchDecider {
 public:
  static constexpr int64_t kMinSteps = WorkerSteps::kMinSteps;
  static constexpr int64_t kWindow = WorkerSteps::kWindow;  // steps kept per worker
  // A switch must be predicted 1 / (1 - kMinGain) times as fast: a gain
  // the predictions can tell apart.
  static constexpr double kMinGain = 0.05;
  // The time a switch saves over the rest of the run must exceed its cost
  // this many times.
  static constexpr double kPayback = 2;
  // BSP-equivalent iterations left, at least, where neither a target nor
  // an iteration limit says (Remaining).
  static constexpr double kMinRemaining = 50;
  // Under this predicted speedup a switch waits to be chosen again
  // (docs/auto.md, "How it decides": two readings of three).
  static constexpr double kConfirmBelow = 1.5;
  // The speedup a switch into the reference policy (BSP) from another
  // candidate must be predicted: it gives up tolerance of a straggler,
  // which one coming later costs again (docs/auto.md, "How it decides":
  // into BSP).
  static constexpr double kIntoBsp = 1.25;
  // Iterations at least between two decisions, however many lasting
  // changes come (on a busy host the level of many workers moves often).
  static constexpr int64_t kMinGap = 10;
  // A first decision that reads transient delays from fewer delayed steps
  // than this confirms a marginal gain as later decisions do: the rate's
  // relative error is then about a tenth or more.
  static constexpr int64_t kFewDelays = 100;
  // On shared cores, what a switch back into a policy left before must be
  // predicted beyond its bar: the predictions' error there (docs/auto.md,
  // "How it decides": back into a policy left before).
  static constexpr double kReturnBar = 1.25;
  // In the background, the share of the run's wall clock the predictions
  // may take (PredictionBudget), beyond a first kPredictAllowanceMs
  // (docs/auto.md, "Where it predicts").
  static constexpr double kPredictShare = 0.02;
  static constexpr double kPredictAllowanceMs = 100;

  struct Options {
    std::vector<std::string>
        candidates;                 // non-empty and checked (MakeAuto); starts under the first
    advise::EfficiencyTable table;  // the job's (advise::EfficiencyFor)
    int64_t batch = 64;             // the job's per-worker batch
    int64_t every = 20;             // iterations between decisions
    double target = 0;              // the run's target accuracy (0: none)
    int64_t max_iterations = 0;     // the run's limit (0: none)
    int64_t sim_iterations = 40;    // simulated per candidate per decision
    // ... where the profile reads transient delays (advise::ReadsDelays),
    // whose rare rounds (several workers late at once) 40 misses.
    int64_t delays_sim_iterations = 40;
    // Predict on the Env's thread (the server's): the push that takes a
    // decision goes on at once, and the first round boundary after the
    // predictions are in chooses. Off, a decision is whole within its push
    // (the simulator and the tests: deterministic).
    bool background = false;
    // The share of the wall clock the predictions may take, beyond a
    // first kPredictAllowanceMs (PredictionBudget; 0: no bound).
    double predict_share = 0;
    std::shared_ptr<Env> env = SystemEnv();  // the clock and the thread it predicts on
  };

  AutoDecider(int64_t num_workers, Options options);
  std::string Name() const override { return std::string(kAutoPolicy); }
  std::string Initial() const override;
  std::optional<SwitchRequest> AfterPush(const SwitchContext& context, WorkerId w,
                                         const PushInfo& push) override;
  std::optional<SwitchRequest> AfterEvaluation(const SwitchContext& context,
                                               double accuracy) override;
  void Switched(std::string_view now_running) override;
  void WorkerJoined(WorkerId w, const WorkerInfo& info) override {
    shared_cores_.WorkerJoined(w, info.host_cores);
  }
  void WorkerGone(WorkerId w) override {
    steps_.Forget(w);
    shared_cores_.WorkerGone(w);
  }
  void RankAdded() override {
    steps_.AddRank();
    shared_cores_.AddRank();
  }
  std::vector<Decision> TakeDecisions() override;

 private:
  // `delayed`: WorkerSteps::Profile's; `after_change`: a lasting change was seen since
  // the last decision.
  std::optional<SwitchRequest> Decide(const SwitchContext& context, advise::ClusterProfile profile,
                                      int64_t delayed, bool after_change);
  // The Advisor's answer to one decision, and what it took, ms.
  struct Predicted {
    Result<advise::Advice> advice = Status::Internal("not predicted");
    double ms = 0;
  };
  // Predictions made on the Env's thread (Options::background), and what
  // the decision read to ask for them.
  struct InFlight {
    std::future<void> done;
    std::shared_ptr<Predicted> predicted;  // written by the Env's thread until `done`
    advise::ClusterProfile profile;
    int64_t delayed = 0;
    Decision decision;  // what the decision read and predicted left
  };
  // A round boundary while predictions are in flight: the decision, once
  // they are in (Finish), else nothing.
  std::optional<SwitchRequest> Collect(const SwitchContext& context);
  // Ends the decision `d` began with `advice`: chooses, records it, and
  // asks for the switch chosen.
  std::optional<SwitchRequest> Finish(const SwitchContext& context,
                                      const advise::ClusterProfile& profile, int64_t delayed,
                                      const Result<advise::Advice>& advice, Decision d);
  // The rule that chooses between the policy running and the advice (class
  // comment): a request, or none to stay; the reason into d.
  std::optional<SwitchRequest> Choose(const SwitchContext& context,
                                      const advise::ClusterProfile& profile, int64_t delayed,
                                      const advise::Advice& advice, Decision* d);
  // Whether a switch into `policy` goes back to one left before, on shared cores.
  bool Returns(std::string_view policy) const;
  // The speedup a switch into `policy` must be predicted (AutoSwitchBar).
  double Bar(std::string_view policy) const;
  // BSP-equivalent iterations predicted left in the run (docs/auto.md,
  // "The iterations left").
  double Remaining(int64_t iteration) const;
  // What the accuracy's progress alone says is left (Remaining before its
  // floor); none without a target and an evaluation above the first.
  std::optional<double> ProgressLeft() const;
  // The BSP-equivalent iterations a switch into a policy of `efficiency`
  // is paid over: `remaining`, unless that is one of Remaining's floors,
  // then the progress the policy switched to makes in that many of its own
  // iterations, and for a policy of stale gradients (`stale`:
  // sync::AnswersEachPush) that needs more iterations than the running one
  // no more than ProgressLeft (docs/auto.md, "The iterations left").
  double SwitchHorizon(double remaining, double efficiency, bool stale) const;

  Options options_;
  advise::Advisor advisor_;
  WorkerSteps steps_;
  SharedCores shared_cores_;
  std::vector<Decision> decisions_;
  int64_t next_due_ = 0;      // iteration of the next periodic decision
  int64_t last_decided_ = 0;  // iteration of the last decision
  bool change_seen_ = false;  // a lasting change since the last decision
  int64_t last_iteration_ = -1;
  // Progress in BSP-equivalent iterations: each iteration counts 1 over
  // the running policy's efficiency (the last decision's prediction).
  double progress_ = 0;
  double running_efficiency_ = 1;
  double chosen_efficiency_ = 1;  // the last switch request's
  std::string running_;
  // What the last two decisions waited to see again, "POLICY for FEATURE"
  // (empty: the decision did not wait), the latest first.
  std::array<std::string, 2> pending_;
  bool informed_ = false;          // a decision has predicted the candidates
  std::vector<std::string> left_;  // the policies switched away from, in order
  int returns_ = 0;                // switches made back into a policy left before
  std::optional<double> first_accuracy_;
  double last_accuracy_ = 0;
  PredictionBudget budget_;
  // The Env's time of the run's first push, where the budget's clock starts.
  std::optional<double> first_push_ms_;
  // Last: destroyed first, waiting for the predictions that use advisor_.
  std::optional<InFlight> in_flight_;
};

// The auto policy `config` asks for (candidates, decide_every, batch,
// num_workers, target_accuracy, max_iterations, decide_in_background: then
// advise::kSimIterations simulated a candidate where it reads transient
// delays, else 40, and the predictions at most kPredictShare of the wall
// clock beyond kPredictAllowanceMs), predicting with the job's table of
// `tables` (advise::EfficiencyFor on config.model, batch and workers),
// on `env`. InvalidArgument, one line, for settings sync::CheckPolicy
// refuses.
Result<std::unique_ptr<Policy>> MakeAuto(const PolicyConfig& config,
                                         const std::vector<advise::EfficiencyTable>& tables,
                                         std::shared_ptr<Env> env = SystemEnv());

// Every policy `config` names: auto (MakeAuto with the installed tables,
// advise::LoadEfficiencies, on SystemEnv: NotFound when they are missing),
// else sync::MakePolicy. The sync::PolicyFactory of the programs that run
// policies: the server and the simulator.
Result<std::unique_ptr<Policy>> MakePolicy(const PolicyConfig& config);

}  // namespace dmlps::autopolicy

#endif  // DMLPS_AUTO_AUTO_H_
