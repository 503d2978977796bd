// The auto policy: SwitchingPolicy under a decider that measures the
// workers live (the times every push carries) and asks the advise engine
// (advise::Advisor) at round boundaries whether another candidate policy
// would reach the target sooner, switching only when the predicted saving
// over the rest of the run pays for the switch (docs/auto.md).
#ifndef DMLPS_SYNC_AUTO_H_
#define DMLPS_SYNC_AUTO_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <future>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dmlps/advise/advisor.h"
#include "dmlps/sync/switching.h"

namespace dmlps::sync {

// The candidates auto runs when none are given: those of advise's default
// list that it can switch into live (workers in kSync mode) and that fit
// `num_workers` (backup:1 needs two), backup:1 first from three workers,
// else bsp (auto starts under the first); and backup:B for 2 <= B <
// `num_workers` where the efficiency table of the job (`model`, `batch`:
// advise::BuiltInEfficiency) was learned on `num_workers` and has a row
// of backup:B's own (mlp:128 on 4 workers: backup:2 and backup:3).
std::vector<std::string> AutoCandidates(int64_t num_workers, std::string_view model = "",
                                        int64_t batch = 0);

// Whether auto can run `entry` ("ssp:3", as dmlps-bench names policies):
// InvalidArgument, one line, for one that names no policy or whose workers
// run in another mode (wbsp, abps, token, the local-SGD policies), since a
// worker learns its mode once, when it joins.
Status CheckAutoCandidate(std::string_view entry, int64_t num_workers, int64_t batch);

// The speedup a switch from `running` into `to` must be predicted:
// 1 / (1 - AutoDecider::kMinGain), or AutoDecider::kIntoBsp into BSP from
// another policy, times AutoDecider::kReturnBar to the power `returns`: the
// how-manieth return this switch would be, counting it, where it goes back
// into a policy the run left before on shared cores (0 where it does not).
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

// Decides for SwitchingPolicy. Per worker it keeps the recent time per
// sample of computing (busy_s / batch) and the time each step spends
// beyond it (the server's cycle, else the worker's sending time), and
// watches its computing and sending per sample for a lasting change of level (as
// predict::FindLastingChanges, on lower quartiles so that transient delays
// are none; a spike is not one). It decides at the
// first round boundary once every live worker has kMinSteps measured
// steps, then every `every` iterations, and sooner (but kMinGap after the
// last decision) once a lasting change has kMinSteps steps behind it. A decision builds a cluster
// profile from the steps since each worker's last lasting change (level: the median of the steps
// under kDelayFactor times their lower quartile, or their fastest where that alone is at the
// cluster's level; delays: steps at advise's kDelayFactor times it or more, one rate for all
// where the workers' counts are what one rate would give; whether they take turns by the workers'
// clocks, advise::RotatingDelay), has the Advisor predict every candidate, takes its
// recommendation, and switches when that is predicted kMinGain faster than the policy running
// (kIntoBsp times as fast for one into BSP from another candidate) and the time saved over the rest
// of the run (the BSP-equivalent iterations left, from the accuracy's progress toward the target
// but at least `every` and at least as many as done so far, and where a floor speaks the progress
// that many iterations of the policy switched to make, the floor / its efficiency; else the
// iteration limit, else as many as done so far, at least kMinRemaining) exceeds kPayback times the
// switch's cost (the drain: the slowest worker's step plus one iteration of the new policy). After
// the first decision, and at it on shared cores (advise::SharedCores) or on a reading of transient
// delays from under kFewDelays delayed steps, a switch predicted under kConfirmBelow times as fast
// is made only when the next decision, kMinGap iterations on, chooses it again for the same kind
// of cause (advise::FeatureKind). In the background (Options::background) the predictions are made
// on a thread of their own from what the boundary read, and the first round boundary after they
// are in chooses; no other decision starts meanwhile, nor one beyond Options::predict_share of the
// wall clock (PredictionBudget): a decision due then waits for the first boundary it allows.
//
// A worker whose last kMinSteps pushes, or more, report a step time it
// cannot read (none, not a number, no samples, or over ten times what the
// server saw the step take: a broken clock, or a lie) is left out of the
// profile, its decisions saying so, rather than holding them all back; the
// first time, a warning says why.
//
// On shared cores (once a decision read them so, for the rest of the run,
// and at the fewest cores read so far, at most the server host's where
// every live worker runs there, or more workers than its cores run there;
// there a lasting change of speed takes the reading then: ReadCores) a
// switch back into a policy the run left before must be predicted
// kReturnBar times the bar it would otherwise need, and every further
// return kReturnBar times more than the last: a host whose load keeps
// changing moves the run back and forth less and less often.
class AutoDecider : public SwitchDecider {
 public:
  static constexpr int64_t kMinSteps = 6;
  static constexpr int64_t kWindow = 30;  // steps kept per worker
  static constexpr double kMinGain = 0.05;
  static constexpr double kPayback = 2;
  static constexpr double kMinRemaining = 50;
  // A switch predicted under this many times as fast as the policy running
  // waits for the next decision (kMinGap on) to choose it again, but at the
  // first decision on cores of the workers' own (unless it reads few delays).
  static constexpr double kConfirmBelow = 1.5;
  // A switch from any other candidate into BSP must be predicted this many
  // times as fast: it gives up tolerance of a straggler, and one that comes
  // later costs what the moves away and back cost. Four workers, the last
  // turning 4x slow at iteration 150 of about 210: a run under BSP that
  // moved to backup:1 took 1.15-1.3x backup:1's time from the start; on
  // their even cluster backup:1 takes 1.07x BSP's (medians of eight
  // sittings, docs/auto-goals.md).
  static constexpr double kIntoBsp = 1.25;
  // Iterations at least between two decisions, however many lasting
  // changes come (on a busy host the level of many workers moves often).
  static constexpr int64_t kMinGap = 10;
  // A first decision that reads transient delays from fewer delayed steps
  // than this confirms a marginal gain as later decisions do: the rate's
  // relative error is then about a tenth or more.
  static constexpr int64_t kFewDelays = 100;
  // On shared cores, what a switch back into a policy left before must be
  // predicted beyond its bar: the predictions' error there. Four workers
  // on two cores: backup:2's time per iteration predicted 0.83x
  // backup:1's, measured 0.75x; backup:3's 0.73x, measured 0.65x; and
  // from one decision to the next the predictions moved by 10-20%,
  // enough to go back and forth between two policies within a few
  // percent of each other, each move a drain.
  static constexpr double kReturnBar = 1.25;
  // In the background, the share of the run's wall clock the predictions
  // may take (PredictionBudget), beyond a first kPredictAllowanceMs. Four
  // workers on two cores under transient delays: at advise's 300
  // simulated iterations a decision took 20-25 ms, every 10-20 iterations
  // of 8-10 ms, 330-823 ms a run of 2.5-5.9 s (172-200 ms within the
  // budget, the move off backup:2 at the same iterations), and auto's
  // iterations under backup:3 took 1.068x the fixed policy's before and
  // 1.018x within it (means of 25 and 22 runs paired by seed, standard
  // errors 0.024 and 0.016; docs/auto.md).
  // At 40, where no delays are read, a run's decisions took 45-140 ms.
  static constexpr double kPredictShare = 0.02;
  static constexpr double kPredictAllowanceMs = 100;

  struct Options {
    std::vector<std::string> candidates;  // non-empty; checked by MakeAuto; starts under the first
    int64_t batch = 64;                   // the job's per-worker batch
    int64_t every = 20;                   // iterations between decisions
    double target = 0;                    // the run's target accuracy (0: none)
    int64_t max_iterations = 0;           // the run's limit (0: none)
    int64_t sim_iterations = 40;          // simulated per candidate per decision
    // ... where the profile reads transient delays (advise::ReadsDelays),
    // whose rare rounds (several workers late at once) 40 misses.
    int64_t delays_sim_iterations = 40;
    // Predict on a thread of its own (the server's): the push that takes a
    // decision goes on at once, and the first round boundary after the
    // predictions are in chooses. Off, a decision is whole within its push
    // (the simulator and the tests: deterministic).
    bool background = false;
    // The share of the wall clock the predictions may take, beyond a
    // first kPredictAllowanceMs (PredictionBudget; 0: no bound).
    double predict_share = 0;
    std::string model;  // the job's: the efficiency table's (empty: default)
  };

  AutoDecider(int64_t num_workers, Options options);
  std::string Name() const override { return "auto"; }
  std::string Initial() const override;
  std::optional<SwitchRequest> AfterPush(const SwitchContext& context, WorkerId w,
                                         const PushInfo& push) override;
  std::optional<SwitchRequest> AfterEvaluation(const SwitchContext& context,
                                               double accuracy) override;
  void Switched(std::string_view now_running) override;
  void WorkerJoined(WorkerId w, const WorkerInfo& info) override {
    host_cores_[w] = info.host_cores;
  }
  void WorkerGone(WorkerId w) override {
    history_[w] = {};
    host_cores_[w] = 0;
  }
  void RankAdded() override {
    history_.emplace_back();
    host_cores_.push_back(0);
  }
  std::vector<Decision> TakeDecisions() override;

 private:
  struct History {
    std::deque<double> per_sample;  // seconds of computing per sample, newest last
    std::deque<double> overhead;    // seconds per step beyond computing
    std::deque<double> core_share;  // the share of each step's computing that had a core
    std::deque<double> comm;        // seconds the push before each took to send
    std::deque<double> whole;       // seconds per sample computing and sending (changes sought in)
    std::deque<double> slowness;    // each step's time over its computing (>= 1)
    std::deque<double> work;        // seconds per sample each step computed on a core
    std::deque<int64_t> clock;      // the worker's clock of each step
    int64_t steps = 0;              // measured in all
    int64_t change_at = 0;          // the step the last lasting change was seen at
    int64_t unreadable = 0;         // pushes in a row whose step time it could not read
    bool warned = false;            // that it was left out for them, logged
  };
  // Whether worker w's last kMinSteps pushes, or more, reported step times
  // it cannot read: its decisions leave it out (class comment).
  bool LeftOut(WorkerId w) const { return history_[w].unreadable >= kMinSteps; }

  // Records w's push; true when it shows a new lasting change.
  bool Measure(WorkerId w, const PushInfo& push);
  // The live workers' profile, and into *delayed the delayed steps it
  // read; nothing until each has kMinSteps steps since its last change.
  std::optional<advise::ClusterProfile> Profile(const Policy& policy, int64_t* delayed) const;
  // `delayed`: Profile's; `after_change`: a lasting change was seen since
  // the last decision.
  std::optional<SwitchRequest> Decide(const SwitchContext& context, advise::ClusterProfile profile,
                                      int64_t delayed, bool after_change);
  // Sets profile->cores from the fewest cores read so far, at most the
  // host's where every live worker runs on the server's host (class
  // comment); after a lasting change there, from the reading now.
  void ReadCores(const Policy& policy, bool after_change, advise::ClusterProfile* profile);
  // The cores of the server's host where every live worker runs there
  // (WorkerInfo::host_cores), else 0; into *live, if given, the live workers.
  int64_t ServerHostCores(const Policy& policy, int64_t* live = nullptr) const;
  // ServerHostCores where the live workers outnumber them; else 0.
  int64_t CrowdedCores(const Policy& policy) const;
  // Predictions made on a thread of their own (Options::background), and
  // what the decision read to ask for them.
  struct InFlight {
    std::future<std::pair<Result<advise::Advice>, double>> advice;  // and what it took, ms
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
  // The speedup a switch into `policy` must be predicted: kMinGain, or
  // kIntoBsp into BSP, times kReturnBar once more for each return made so
  // far where this one Returns.
  double Bar(std::string_view policy) const;
  // BSP-equivalent iterations predicted left in the run.
  double Remaining(int64_t iteration) const;
  // What the accuracy's progress alone says is left (Remaining before its
  // floor); none without a target and an evaluation above the first.
  std::optional<double> ProgressLeft() const;
  // The BSP-equivalent iterations a switch into a policy of `efficiency`
  // is paid over: `remaining`, unless that is one of Remaining's floors
  // (`every`, or the iterations done so far, above what the accuracy's
  // progress says), then the progress the policy switched to makes in that
  // many of its own iterations, and for a policy of stale gradients
  // (`stale`: AnswersEachPush) that needs more iterations than the running
  // one no more than ProgressLeft.
  double SwitchHorizon(double remaining, double efficiency, bool stale) const;

  Options options_;
  advise::Advisor advisor_;
  std::vector<History> history_;
  std::vector<int64_t> host_cores_;  // per rank, WorkerInfo::host_cores
  std::vector<Decision> decisions_;
  int64_t next_due_ = 0;         // iteration of the next periodic decision
  int64_t last_decided_ = 0;     // iteration of the last decision
  bool change_seen_ = false;     // a lasting change since the last decision
  bool changed_before_ = false;  // the last decision followed a lasting change
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
  int64_t cores_ = 0;              // the fewest shared cores read (0: not shared)
  std::vector<std::string> left_;  // the policies switched away from, in order
  int returns_ = 0;                // switches made back into a policy left before
  std::optional<double> first_accuracy_;
  double last_accuracy_ = 0;
  PredictionBudget budget_;
  // The run's first push, where the budget's clock starts.
  std::optional<std::chrono::steady_clock::time_point> first_push_;
  // Last: destroyed first, waiting for the predictions that use advisor_.
  std::optional<InFlight> in_flight_;
};

// The auto policy `config` asks for (candidates, decide_every, batch, num_workers,
// target_accuracy, max_iterations, decide_in_background: then
// advise::kSimIterations simulated a candidate where it reads transient
// delays, else 40, and the predictions at most kPredictShare of the wall
// clock beyond kPredictAllowanceMs). REQUIRES: CheckPolicy(config) passed
// (every candidate one CheckAutoCandidate takes).
std::unique_ptr<Policy> MakeAuto(const PolicyConfig& config);

}  // namespace dmlps::sync

#endif  // DMLPS_SYNC_AUTO_H_
