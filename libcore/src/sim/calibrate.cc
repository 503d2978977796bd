// The cost model: what a gradient step, a pass over the parameters and an
// evaluation cost on this machine, timed with the same code dmlps-worker and
// dmlps-server run.
#include <Eigen/Core>
#include <algorithm>
#include <barrier>
#include <chrono>
#include <thread>

#include "dmlps/sim/sim.h"
#include "dmlps/worker/epoch_cursor.h"

namespace dmlps::sim {
namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// t along the points' `field` at `samples`: see CostModel::steps.
double Interpolate(const std::vector<StepCost>& steps, int64_t samples, double StepCost::*field) {
  if (steps.empty()) return 0;
  const auto b = static_cast<double>(samples);
  const StepCost& first = steps.front();
  if (steps.size() == 1 || samples <= first.samples) {
    return first.samples > 0 ? first.*field * b / static_cast<double>(first.samples) : first.*field;
  }
  size_t i = 1;
  while (i + 1 < steps.size() && steps[i].samples < samples) ++i;
  const StepCost& lo = steps[i - 1];
  const StepCost& hi = steps[i];
  const double span = static_cast<double>(hi.samples - lo.samples);
  const double slope = span > 0 ? (hi.*field - lo.*field) / span : 0;
  return std::max(0.0, lo.*field + slope * (b - static_cast<double>(lo.samples)));
}

// One thread's timer of whole steps, each as dmlps-worker computes one.
class StepTimer {
 public:
  StepTimer(const model::ModelSpec& spec, const data::Dataset& train, uint64_t seed)
      : model_(spec), train_(train), cursor_(train.rows(), seed) {
    params_.resize(static_cast<size_t>(model_.num_params()));
    grad_.resize(params_.size());
    model_.Initialize(seed, params_);
  }

  double Once(int64_t samples) {
    const Clock::time_point start = Clock::now();
    cursor_.Take(samples, &indices_);
    train_.Gather(indices_, &x_, &y_);
    model_.LossAndGradient(params_, x_, y_, grad_);
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

 private:
  model::Model model_;
  const data::Dataset& train_;
  worker::EpochCursor cursor_;
  std::vector<float> params_;
  std::vector<float> grad_;
  std::vector<int64_t> indices_;
  Eigen::MatrixXf x_;
  std::vector<int32_t> y_;
};

// Times `rounds` rounds of steps, one of each size in `sizes` a round, so
// that whatever else disturbs the machine for a while disturbs every size
// alike; the median of each size, after a round to warm up. With
// `barrier`, threads timing at once start each step together (they must
// all be given the same sizes and rounds).
std::vector<double> TimeSteps(StepTimer& timer, const std::vector<int64_t>& sizes, int rounds,
                              std::barrier<>* barrier) {
  auto once = [&](int64_t samples) {
    if (barrier != nullptr) barrier->arrive_and_wait();
    return timer.Once(samples);
  };
  for (int64_t b : sizes) once(b);
  std::vector<std::vector<double>> times(sizes.size());
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < sizes.size(); ++i) times[i].push_back(once(sizes[i]));
  }
  std::vector<double> medians;
  for (std::vector<double>& t : times) medians.push_back(Median(std::move(t)));
  return medians;
}

}  // namespace

double CostModel::StepSeconds(int64_t samples) const {
  return Interpolate(steps, samples, &StepCost::seconds);
}

double CostModel::SharedSpeed(int64_t samples) const {
  const double alone = StepSeconds(samples);
  const double shared = Interpolate(steps, samples, &StepCost::shared_seconds);
  if (!(alone > 0) || !(shared > alone)) return 1;
  return alone / shared;
}

CostModel CostModel::Linear(double fixed_s, double per_sample_s) {
  CostModel cost;
  // Two points on the line: interpolation between them and extrapolation
  // beyond are the line itself.
  const double at_1 = fixed_s + per_sample_s;
  const double at_1024 = fixed_s + 1024 * per_sample_s;
  cost.steps = {{1, at_1, at_1}, {1024, at_1024, at_1024}};
  return cost;
}

Result<CostModel> Calibrate(const model::ModelSpec& spec, const data::Dataset& train,
                            const data::Dataset& test, int64_t batch, int64_t shared_cores) {
  if (train.rows() == 0 || test.rows() == 0) {
    return Status::InvalidArgument("calibration needs training and test samples");
  }
  if (batch < 1) return Status::InvalidArgument("calibration needs a batch of at least 1");
  std::vector<int64_t> sizes;
  for (int64_t b : {batch / 16, batch / 4, batch / 2, batch, 2 * batch}) {
    b = std::max<int64_t>(1, b);
    if (std::find(sizes.begin(), sizes.end(), b) == sizes.end()) sizes.push_back(b);
  }
  std::sort(sizes.begin(), sizes.end());

  CostModel cost;
  StepTimer timer(spec, train, 1);
  // Rounds for about 0.4 s of timing, 5 to 41 of them.
  double round_s = 0;
  for (int64_t b : sizes) round_s += timer.Once(b);
  const int rounds = round_s > 0 ? static_cast<int>(std::clamp(0.4 / round_s, 5.0, 41.0)) : 41;
  const std::vector<double> alone = TimeSteps(timer, sizes, rounds, nullptr);
  for (size_t i = 0; i < sizes.size(); ++i) cost.steps.push_back({sizes[i], alone[i], alone[i]});
  if (shared_cores >= 2) {
    // The same steps on `shared_cores` threads at once: how much slower each
    // is when the cores are all busy (caches and memory are shared).
    const auto threads = static_cast<size_t>(std::min<int64_t>(shared_cores, 16));
    std::vector<std::vector<double>> medians(threads);
    std::barrier<> barrier(static_cast<std::ptrdiff_t>(threads));
    std::vector<std::thread> pool;
    for (size_t t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        StepTimer mine(spec, train, 100 + t);
        medians[t] = TimeSteps(mine, sizes, rounds, &barrier);
      });
    }
    for (std::thread& t : pool) t.join();
    for (size_t i = 0; i < sizes.size(); ++i) {
      std::vector<double> per_thread;
      for (size_t t = 0; t < threads; ++t) per_thread.push_back(medians[t][i]);
      cost.steps[i].shared_seconds = std::max(cost.steps[i].seconds, Median(per_thread));
    }
  }
  // Noise must not make a bigger step cheaper.
  for (size_t i = 1; i < cost.steps.size(); ++i) {
    cost.steps[i].seconds = std::max(cost.steps[i].seconds, cost.steps[i - 1].seconds);
    cost.steps[i].shared_seconds =
        std::max(cost.steps[i].shared_seconds, cost.steps[i - 1].shared_seconds);
  }

  // A pass over the parameters, as staging a push or a momentum step makes.
  model::Model model(spec);
  const auto n = static_cast<Eigen::Index>(model.num_params());
  Eigen::VectorXf a = Eigen::VectorXf::Zero(n);
  Eigen::VectorXf b = Eigen::VectorXf::Ones(n);
  std::vector<double> passes;
  for (int r = 0; r < 21; ++r) {
    const Clock::time_point start = Clock::now();
    a += 0.5f * b;
    passes.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  if (a.sum() == 0) passes.push_back(0);  // keeps the loop from being optimised away
  cost.param_s = Median(passes) / static_cast<double>(n);

  if (shared_cores >= 1) {
    std::vector<float> params(static_cast<size_t>(n));
    model.Initialize(1, params);
    const Clock::time_point start = Clock::now();
    model.Evaluate(params, test);
    cost.eval_s = std::chrono::duration<double>(Clock::now() - start).count();
  }
  return cost;
}

}  // namespace dmlps::sim
