// The auto policy's decider: live measurements in, the advise engine's
// predictions out, a switch when it pays for itself (docs/auto.md).
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <utility>

#include "auto/readings.h"
#include "dmlps/advise/trace_profile.h"
#include "dmlps/auto/auto.h"
#include "dmlps/predict/replay.h"
#include "dmlps/sync/registry.h"

namespace dmlps::autopolicy {

AutoDecider::AutoDecider(int64_t num_workers, Options options)
    : options_(std::move(options)),
      advisor_(options_.table),
      steps_(num_workers),
      shared_cores_(num_workers),
      running_(AutoDecider::Initial()),
      budget_(options_.predict_share, kPredictAllowanceMs) {}

std::string AutoDecider::Initial() const {
  return options_.candidates.empty() ? std::string(sync::kReferencePolicy)
                                     : options_.candidates.front();
}

std::optional<double> AutoDecider::ProgressLeft() const {
  if (!(options_.target > 0 && first_accuracy_ && options_.target > *first_accuracy_ &&
        last_accuracy_ > *first_accuracy_)) {
    return std::nullopt;
  }
  const double p = (last_accuracy_ - *first_accuracy_) / (options_.target - *first_accuracy_);
  if (p >= 1) return 0.0;
  return std::max(progress_, 1.0) * (1 - p) / p;
}

double AutoDecider::Remaining(int64_t iteration) const {
  if (const std::optional<double> left = ProgressLeft()) {
    if (*left <= 0) return 0;
    // At least until the next periodic decision, and at least as many as
    // done so far: the accuracy climbs fast, then crawls to the target
    // (docs/auto.md, "The iterations left").
    return std::max({*left, static_cast<double>(std::max<int64_t>(1, options_.every)), progress_});
  }
  if (options_.max_iterations > 0) {
    return static_cast<double>(std::max<int64_t>(0, options_.max_iterations - iteration)) /
           running_efficiency_;
  }
  return std::max(progress_, kMinRemaining);
}

double AutoDecider::SwitchHorizon(double remaining, double efficiency, bool stale) const {
  const auto every = static_cast<double>(std::max<int64_t>(1, options_.every));
  const std::optional<double> left = ProgressLeft();
  if (!left || remaining <= *left || !(efficiency > 0)) return remaining;
  if (stale && efficiency > running_efficiency_) {
    // A policy of stale gradients that needs more iterations than the
    // running one gains over no more than the accuracy says is left:
    // entered on a model all but trained, its staler gradients first cost
    // accuracy. One that needs more iterations for fewer samples a round
    // (backup) is counted as the others.
    return *left < every ? std::min(every / efficiency, *left) : *left;
  }
  // A floor speaks: `remaining` iterations of the policy switched to make
  // remaining / efficiency of BSP's progress; a switch into a policy that
  // needs more iterations (SSP) gains over less progress.
  return remaining / efficiency;
}

std::optional<SwitchRequest> AutoDecider::AfterPush(const SwitchContext& context, WorkerId w,
                                                    const PushInfo& push) {
  if (steps_.Measure(w, push)) change_seen_ = true;
  if (!first_push_ms_) first_push_ms_ = options_.env->NowMs();
  if (context.iteration == last_iteration_) return std::nullopt;
  // A round boundary: the first push since the iteration moved on.
  if (last_iteration_ >= 0) {
    progress_ += static_cast<double>(context.iteration - last_iteration_) / running_efficiency_;
  }
  last_iteration_ = context.iteration;
  // One decision at a time: none starts while predictions are in flight.
  if (in_flight_) return Collect(context);
  const bool changed = change_seen_ && context.iteration >= last_decided_ + kMinGap;
  if (context.iteration < next_due_ && !changed) return std::nullopt;
  if (!budget_.Allows(options_.env->NowMs() - *first_push_ms_)) {
    return std::nullopt;  // due, at the first boundary the budget allows
  }
  int64_t delayed = 0;
  const std::optional<advise::ClusterProfile> profile = steps_.Profile(
      *context.policy, options_.batch, shared_cores_.Known(*context.policy), &delayed);
  if (!profile) return std::nullopt;  // not enough steps measured yet
  const bool after_change = change_seen_;
  change_seen_ = false;
  last_decided_ = context.iteration;
  next_due_ = context.iteration + std::max<int64_t>(1, options_.every);
  return Decide(context, *profile, delayed, after_change);
}

std::optional<SwitchRequest> AutoDecider::AfterEvaluation(const SwitchContext& /*context*/,
                                                          double accuracy) {
  if (!first_accuracy_) first_accuracy_ = accuracy;
  last_accuracy_ = accuracy;
  return std::nullopt;
}

std::optional<SwitchRequest> AutoDecider::Decide(const SwitchContext& context,
                                                 advise::ClusterProfile profile, int64_t delayed,
                                                 bool after_change) {
  shared_cores_.Read(*context.policy, after_change, &profile);
  Decision d;
  d.iteration = context.iteration;
  d.measured = DescribeMeasured(profile);
  for (WorkerId w = 0; w < context.policy->num_workers(); ++w) {
    if (!context.policy->joined(w) || !steps_.LeftOut(w)) continue;
    d.measured += d.measured.find("; left out") == std::string::npos
                      ? fmt::format("; left out (step times unreadable): worker-{}", w)
                      : fmt::format(", worker-{}", w);
  }
  d.remaining = Remaining(context.iteration);
  advise::AdvisorOptions options;
  options.candidates = options_.candidates;
  options.iterations =
      advise::ReadsDelays(profile) ? options_.delays_sim_iterations : options_.sim_iterations;
  auto predict = [advisor = &advisor_, env = options_.env, profile, options] {
    const double start = env->NowMs();
    Predicted predicted{advisor->Advise(profile, options)};
    predicted.ms = env->NowMs() - start;
    return predicted;
  };
  if (options_.background) {
    // Only the Env's thread touches advisor_ while the predictions are
    // made there: no other decision starts until Collect has them.
    auto predicted = std::make_shared<Predicted>();
    std::optional<std::future<void>> done =
        options_.env->Start([predicted, predict] { *predicted = predict(); });
    if (done) {
      in_flight_ = InFlight{std::move(*done), std::move(predicted), profile, delayed, std::move(d)};
      return std::nullopt;
    }
    // No thread to be had: decide here, as without background.
  }
  const Predicted predicted = predict();
  d.decide_ms = predicted.ms;
  budget_.Spend(predicted.ms);
  return Finish(context, profile, delayed, predicted.advice, std::move(d));
}

std::optional<SwitchRequest> AutoDecider::Collect(const SwitchContext& context) {
  if (in_flight_->done.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    return std::nullopt;
  }
  InFlight done = std::move(*in_flight_);
  in_flight_.reset();
  done.done.get();
  const Predicted& predicted = *done.predicted;
  done.decision.decide_ms = predicted.ms;
  budget_.Spend(predicted.ms);
  if (context.iteration != done.decision.iteration) {
    // Chosen now, on what was read then.
    done.decision.measured =
        fmt::format("at iteration {}: {}", done.decision.iteration, done.decision.measured);
    done.decision.iteration = context.iteration;
  }
  return Finish(context, done.profile, done.delayed, predicted.advice, std::move(done.decision));
}

std::optional<SwitchRequest> AutoDecider::Finish(const SwitchContext& context,
                                                 const advise::ClusterProfile& profile,
                                                 int64_t delayed,
                                                 const Result<advise::Advice>& advice, Decision d) {
  d.running = running_;
  d.chosen = running_;
  std::optional<SwitchRequest> request;
  if (!advice.ok()) {
    pending_ = {};
    d.reason = "no prediction, staying: " + advice.status().message();
  } else {
    for (const advise::Prediction& p : advice->predictions) {
      if (p.failure.empty()) d.predicted.emplace_back(p.policy, p.effective_s);
    }
    request = Choose(context, profile, delayed, *advice, &d);
    informed_ = true;
  }
  if (request) left_.push_back(running_);
  decisions_.push_back(std::move(d));
  return request;
}

std::optional<SwitchRequest> AutoDecider::Choose(const SwitchContext& context,
                                                 const advise::ClusterProfile& profile,
                                                 int64_t delayed, const advise::Advice& advice,
                                                 Decision* d) {
  // This decision's wait, if it waits, becomes the latest; the older of
  // the two before it is forgotten.
  const std::array<std::string, 2> pending = pending_;
  pending_ = {std::string(), pending[0]};
  const advise::Prediction* now = FindPrediction(advice, running_);
  const advise::Prediction* best = FindPrediction(advice, advice.recommended);
  if (now != nullptr) running_efficiency_ = now->efficiency;
  if (best == nullptr || best == now) {
    d->reason = "stay: " + advice.reason;
    return std::nullopt;
  }
  const double now_s = now != nullptr ? now->effective_s : std::numeric_limits<double>::max();
  double slowest = 0;
  for (const advise::WorkerProfile& w : profile.workers) slowest = std::max(slowest, w.step_s);
  d->cost_s = slowest + best->iteration_s;
  const double horizon =
      SwitchHorizon(d->remaining, best->efficiency, sync::AnswersEachPush(best->policy));
  d->gain_s = now != nullptr ? horizon * (now_s - best->effective_s) : horizon;
  const double speedup = now_s / best->effective_s;
  const double bar = Bar(best->policy);
  if (now != nullptr && speedup < bar) {
    d->reason = GivesUpTolerance(running_, best->policy)
                    ? fmt::format(
                          "stay: {} is predicted {:.2f}x as fast, under the {:.3g}x a "
                          "switch from {} into a policy that waits for every push needs",
                          best->policy, speedup, bar, running_)
                    : fmt::format(
                          "stay: {} is predicted {:.2f}x as fast as {}, under the {:.3g}x "
                          "a switch{} needs",
                          best->policy, speedup, running_, bar,
                          Returns(best->policy) ? " back into a policy left before" : "");
    return std::nullopt;
  }
  if (d->gain_s <= kPayback * d->cost_s) {
    d->reason = fmt::format(
        "stay: {} would save {:.3g} s over {:.0f} iterations left, not {}x the switch's {:.3g} s",
        best->policy, d->gain_s, horizon, kPayback, d->cost_s);
    return std::nullopt;
  }
  if (speedup < kConfirmBelow &&
      (shared_cores_.cores() > 0 || informed_ ||
       (advise::ReadsDelays(profile) && delayed < kFewDelays)) &&
      std::find(pending.begin(), pending.end(), Awaited(best->policy, profile)) == pending.end()) {
    // A marginal gain must be seen again, at one of the next two
    // decisions (the first kMinGap iterations on), for the same kind of
    // cause, whenever the running policy was chosen on a reading (after the
    // first decision), the workers share cores with other work, or the
    // first reading is of delays on few steps (docs/auto.md, "How it
    // decides": two readings of three, the first reading).
    pending_[0] = Awaited(best->policy, profile);
    next_due_ = context.iteration + kMinGap;
    d->reason = fmt::format(
        "wait: {} is predicted {:.2f}x as fast, under {}x: switches if one of the next two "
        "decisions agrees; {}",
        best->policy, speedup, kConfirmBelow, advice.reason);
    return std::nullopt;
  }
  if (Returns(best->policy)) ++returns_;
  d->chosen = best->policy;
  chosen_efficiency_ = best->efficiency;
  pending_ = {};
  d->reason = fmt::format("switch: saves {:.3g} s over {:.0f} iterations left for {:.3g} s; {}",
                          d->gain_s, horizon, d->cost_s, advice.reason);
  return SwitchRequest{best->policy, d->reason, speedup, bar};
}

bool AutoDecider::Returns(std::string_view policy) const {
  return shared_cores_.cores() > 0 && std::find(left_.begin(), left_.end(), policy) != left_.end();
}

double AutoDecider::Bar(std::string_view policy) const {
  return AutoSwitchBar(running_, policy, Returns(policy) ? returns_ + 1 : 0);
}

void AutoDecider::Switched(std::string_view now_running) {
  running_ = std::string(now_running);
  running_efficiency_ = chosen_efficiency_;
}

std::vector<Decision> AutoDecider::TakeDecisions() { return std::exchange(decisions_, {}); }

}  // namespace dmlps::autopolicy
