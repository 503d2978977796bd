#include "dmlps/sync/lbbsp.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "dmlps/predict/batches.h"

namespace dmlps::sync {

using predict::AnalyticBatches;
using predict::BatchTarget;
using predict::Distribute;
using predict::kNoBatchCap;

predict::PredictorOptions PredictorOptionsFor(const PolicyConfig& config) {
  predict::PredictorOptions options;
  options.ema_alpha = config.ema_alpha;
  options.arima_p = config.arima_p;
  options.arima_d = config.arima_d;
  options.arima_q = config.arima_q;
  // The window grows with the order, so that every order the predictor
  // takes fits.
  options.arima_window =
      std::max(options.arima_window,
               predict::ArimaPredictor::MinHistory(config.arima_p, config.arima_d, config.arima_q));
  return options;
}

LbBspPolicy::LbBspPolicy(const PolicyConfig& config)
    : BspPolicy(config.job.workers),
      config_(config),
      global_batch_(config.job.batch * config.job.workers),
      batch_(config.job.workers),
      cap_(config.job.workers, 0),
      window_time_(config.job.workers, 0),
      window_steps_(config.job.workers, 0),
      window_(config.rebalance_every) {
  const int64_t n = config.job.workers;
  for (WorkerId w = 0; w < n; ++w) {
    batch_[w] = global_batch_ / n + (w < global_batch_ % n ? 1 : 0);
  }
  first_step_ = config.lb_step > 0 ? config.lb_step : std::max<int64_t>(1, global_batch_ / (4 * n));
  step_ = first_step_;
  predictors_.reserve(n);
  for (WorkerId w = 0; w < n; ++w) {
    Result<std::unique_ptr<predict::SpeedPredictor>> made =
        predict::MakePredictor(config.predictor, PredictorOptionsFor(config));
    // MakePolicy has checked the name; the fallback only keeps a policy built
    // directly from bad settings well defined.
    predictors_.push_back(made.ok() ? std::move(made).value()
                                    : std::make_unique<predict::LastValuePredictor>());
  }
}

void LbBspPolicy::OnJoin(WorkerId w, const WorkerInfo& info, Actions* out) {
  cap_[w] = std::max<int64_t>(0, info.max_batch);
  if (reshaped_) {
    ForgetSpeed(w);
    batch_[w] = 0;
    Resplit();
    return;
  }
  // Normally the caps are ample and nothing changes. A cap below the worker's
  // share moves the excess to the others in proportion to their batches; when
  // all caps together hold less than B, every worker runs at its cap and the
  // sum stays below B (MakePolicy cannot know the caps to refuse the run).
  const int64_t target = BatchTarget(global_batch_, cap_);
  int64_t sum = 0;
  bool over_cap = false;
  for (WorkerId v = 0; v < num_workers(); ++v) {
    sum += batch_[v];
    over_cap = over_cap || (cap_[v] > 0 && batch_[v] > cap_[v]);
  }
  if (!over_cap && sum == target) return;
  std::vector<double> weight(batch_.begin(), batch_.end());
  std::vector<int64_t> lo(num_workers(), 1);
  std::vector<int64_t> hi(num_workers());
  for (WorkerId v = 0; v < num_workers(); ++v) hi[v] = cap_[v] > 0 ? cap_[v] : kNoBatchCap;
  batch_ = Distribute(target, weight, lo, hi);
}

void LbBspPolicy::OnLeave(WorkerId w, Actions* out) {
  reshaped_ = true;
  ForgetSpeed(w);
  batch_[w] = 0;
  Resplit();
  BspPolicy::OnLeave(w, out);
}

void LbBspPolicy::OnAddWorker() {
  reshaped_ = true;
  batch_.push_back(0);
  cap_.push_back(0);
  window_time_.push_back(0);
  window_steps_.push_back(0);
  predictors_.push_back(nullptr);
  ForgetSpeed(num_workers() - 1);
}

void LbBspPolicy::ForgetSpeed(WorkerId w) {
  Result<std::unique_ptr<predict::SpeedPredictor>> made =
      predict::MakePredictor(config_.predictor, PredictorOptionsFor(config_));
  predictors_[w] =
      made.ok() ? std::move(made).value() : std::make_unique<predict::LastValuePredictor>();
  window_time_[w] = 0;
  window_steps_[w] = 0;
}

void LbBspPolicy::Resplit() {
  const int64_t n = num_workers();
  std::vector<double> weight(n, 0);
  std::vector<int64_t> lo(n, 0);
  std::vector<int64_t> hi(n, 0);
  std::vector<int64_t> live_caps;
  double sum = 0;
  int64_t with_batch = 0;
  for (WorkerId v = 0; v < n; ++v) {
    if (!joined(v)) continue;
    live_caps.push_back(cap_[v]);
    if (batch_[v] > 0) {
      sum += static_cast<double>(batch_[v]);
      ++with_batch;
    }
  }
  if (live_caps.empty()) return;
  const double newcomer = with_batch > 0 ? sum / static_cast<double>(with_batch) : 1.0;
  for (WorkerId v = 0; v < n; ++v) {
    if (!joined(v)) {
      batch_[v] = 0;
      continue;
    }
    weight[v] = batch_[v] > 0 ? static_cast<double>(batch_[v]) : newcomer;
    lo[v] = 1;
    hi[v] = cap_[v] > 0 ? cap_[v] : kNoBatchCap;
  }
  batch_ = Distribute(BatchTarget(global_batch_, live_caps), weight, lo, hi);
}

std::vector<int64_t> LbBspPolicy::SaveExtra() const {
  std::vector<int64_t> extra(batch_.begin(), batch_.end());
  extra.push_back(step_);
  extra.push_back(window_);
  extra.push_back(window_start_);
  extra.push_back(fine_tuning_ ? 1 : 0);
  return extra;
}

void LbBspPolicy::OnRestore(const PolicyState& state) {
  BspPolicy::OnRestore(state);
  const size_t n = batch_.size();
  if (state.extra.size() != n + 4) return;
  int64_t sum = 0;
  for (size_t v = 0; v < n; ++v) {
    if (state.extra[v] < 1) return;  // not a split this policy could have made
    sum += state.extra[v];
  }
  if (sum != global_batch_ || state.extra[n] < 1 || state.extra[n + 1] < 1) return;
  std::copy(state.extra.begin(), state.extra.begin() + static_cast<std::ptrdiff_t>(n),
            batch_.begin());
  step_ = state.extra[n];
  window_ = state.extra[n + 1];
  window_start_ = std::clamp<int64_t>(state.extra[n + 2], 0, state.iteration);
  fine_tuning_ = state.extra[n + 3] != 0;
}

void LbBspPolicy::OnArrival(WorkerId w, const PushInfo& push, bool first, Actions* out) {
  // A step's speed is worth knowing even when its gradient was refused. Its
  // time includes sending the push (the previous one's, the latest known):
  // a worker on a slow link must get less to compute for all to finish
  // together. On a real link the worker's send returns once queued, so the
  // server's own timing from reply to push, which covers both transfers,
  // is the longer and truer one.
  const double comm_s = push.comm_s > 0 && std::isfinite(push.comm_s) ? push.comm_s : 0;
  const double cycle_s = push.cycle_s > 0 && std::isfinite(push.cycle_s) ? push.cycle_s : 0;
  const double time_s = std::max(push.busy_s + comm_s, cycle_s);
  if (push.busy_s > 0 && std::isfinite(push.busy_s) && push.samples > 0) {
    if (config_.lb_mode == "gpu") {
      window_time_[w] += time_s;
      ++window_steps_[w];
    } else {
      predictors_[w]->Observe(
          {static_cast<double>(push.samples) / time_s, push.cpu, push.memory, push.batch});
    }
  }
}

void LbBspPolicy::OnRoundClosed(Actions* out) {
  // Between rounds, so that a round's batches never change under it; the
  // pulls released next carry the new sizes.
  Rebalance();
}

void LbBspPolicy::BeforeReply(WorkerId w, Actions* out) { out->push_back(SetBatch{w, batch_[w]}); }

void LbBspPolicy::Rebalance() {
  if (config_.lb_mode == "gpu") {
    if (round() - window_start_ >= window_) RebalanceNumerical();
  } else if (round() % config_.rebalance_every == 0) {
    RebalanceAnalytic();
  }
}

void LbBspPolicy::RebalanceAnalytic() {
  // Over the live workers only: one gone keeps batch 0.
  std::vector<WorkerId> live;
  std::vector<double> speed;
  std::vector<int64_t> current;
  std::vector<int64_t> caps;
  for (WorkerId w = 0; w < num_workers(); ++w) {
    if (!joined(w)) continue;
    live.push_back(w);
    speed.push_back(predictors_[w]->Predict());
    current.push_back(batch_[w]);
    caps.push_back(cap_[w]);
  }
  if (live.empty()) return;
  const std::vector<int64_t> batch = AnalyticBatches(global_batch_, speed, current, caps);
  for (size_t k = 0; k < live.size(); ++k) batch_[live[k]] = batch[k];
}

namespace {
// The straggler's mean step over the leader's beyond which fine-tuning
// gives way to the fast approach again: well above the ~15% spread that
// fine-tuning leaves, and a window is long enough that a single slow step
// rarely gets there.
constexpr double kRestartSpread = 1.5;
}  // namespace

void LbBspPolicy::RebalanceNumerical() {
  // Time is not linear in the batch, so no formula: find the worker that
  // waits most (leader) and the one everyone waits for (straggler) from the
  // window's mean step time, and move samples between them.
  WorkerId leader = -1;
  WorkerId straggler = -1;
  double leader_time = 0;
  double straggler_time = 0;
  for (WorkerId w = 0; w < num_workers(); ++w) {
    if (window_steps_[w] == 0 || !joined(w)) continue;
    const double time = window_time_[w] / static_cast<double>(window_steps_[w]);
    if (straggler < 0 || time > straggler_time) {
      straggler = w;
      straggler_time = time;
    }
    const bool has_room = cap_[w] <= 0 || batch_[w] < cap_[w];
    if (has_room && (leader < 0 || time < leader_time)) {
      leader = w;
      leader_time = time;
    }
  }
  std::fill(window_time_.begin(), window_time_.end(), 0.0);
  std::fill(window_steps_.begin(), window_steps_.end(), 0);
  window_start_ = round();
  if (leader < 0 || straggler < 0 || leader == straggler) return;

  // A lasting change of speed (a link cut, another job on a machine) shows
  // as a spread far beyond what fine-tuning leaves over a whole window:
  // small steps over long windows would take hundreds of rounds to follow
  // it, so the fast approach starts over.
  if (fine_tuning_ && straggler_time > kRestartSpread * leader_time) {
    step_ = first_step_;
    window_ = config_.rebalance_every;
    fine_tuning_ = false;
    last_leader_ = -1;
    last_straggler_ = -1;
  }

  // Leader and straggler trading places means the last move overshot: from
  // here on, smaller moves judged over longer windows.
  if (leader == last_straggler_ && straggler == last_leader_) {
    step_ = std::max<int64_t>(1, step_ / 2);
    window_ *= 2;
    fine_tuning_ = true;
  }
  last_leader_ = leader;
  last_straggler_ = straggler;

  const int64_t room = cap_[leader] > 0 ? cap_[leader] - batch_[leader] : kNoBatchCap;
  const int64_t move = std::min({step_, batch_[straggler] - 1, room});
  if (move <= 0) return;
  batch_[straggler] -= move;
  batch_[leader] += move;
}

}  // namespace dmlps::sync
