// Measures what predicting the workers' speeds costs LB-BSP: per rebalance,
// N = 4 workers' predictors each observe one step and predict the next, and
// the analytic allocation turns the forecasts into batch sizes; against one
// gradient computation of the default job (mlp:128, Fashion-MNIST-sized
// input, batch 256, on one thread as a worker computes by default), both
// timed here. Rebalancing after every iteration (the server's default is
// every 5) makes this an upper bound on the cost per iteration, and a
// gradient step is less than an iteration (which adds the slowest worker's
// wait and the messages). Prints one ratio per predictor; dmlps's goal is
// under 1%.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dmlps/predict/batches.h"
#include "dmlps/predict/predictor.h"
#include "gradient_job.h"

namespace {

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

}  // namespace

int main() {
  using namespace dmlps;
  using bench::Clock;
  using bench::Seconds;
  const int64_t batch = 256;
  // One thread, as a dmlps-worker computes by default (--threads 1) and as
  // the server's policy runs.
  Eigen::setNbThreads(1);
  const std::unique_ptr<bench::GradientJob> job = bench::DefaultGradientJob(batch);
  if (job == nullptr) return 70;
  job->Step();  // warm up

  // Speeds like those of a run: three workers near 27000 samples/s, one
  // slowed 4x from iteration 150 on, 10% noise, and now and then a step
  // 5x slower (a transient straggler).
  const int64_t workers = 4;
  const int64_t warmup = 200;  // fills ARIMA's window before timing
  const int rounds = 15;
  const int64_t per_round = 200;   // rebalances timed per round
  const int steps_per_round = 20;  // gradient steps timed per round
  const int64_t length = warmup + rounds * per_round;
  std::mt19937_64 random(7);
  std::normal_distribution<double> noise(1.0, 0.1);
  std::uniform_real_distribution<double> uniform(0, 1);
  std::vector<std::vector<predict::Observation>> history(length);
  for (int64_t t = 0; t < length; ++t) {
    for (int64_t w = 0; w < workers; ++w) {
      double speed = 27000 * std::max(0.2, noise(random));
      if (w == workers - 1 && t >= 150) speed /= 4;
      if (w == workers - 2 && uniform(random) < 0.1) speed /= 5;
      history[t].push_back({speed, 0.95 + 0.05 * uniform(random), 6.0e7, 256});
    }
  }

  struct Subject {
    const char* name;
    std::vector<std::unique_ptr<predict::SpeedPredictor>> predictors;
    std::vector<int64_t> batches;
    std::vector<double> ratios;       // per round: rebalance time / step time
    std::vector<double> rebalance_s;  // per round
  };
  std::vector<Subject> subjects;
  for (const char* name : {"last", "ema", "arima", "narx"}) {
    Subject subject{name, {}, std::vector<int64_t>(workers, batch), {}, {}};
    for (int64_t w = 0; w < workers; ++w) {
      Result<std::unique_ptr<predict::SpeedPredictor>> made =
          predict::MakePredictor(name, predict::PredictorOptions{});
      if (!made.ok()) return 70;
      subject.predictors.push_back(std::move(made).value());
    }
    subjects.push_back(std::move(subject));
  }
  const std::vector<int64_t> caps(workers, 0);
  std::vector<double> speed(workers);
  double checksum = 0;
  // One rebalance as LbBspPolicy does it: every worker's step observed,
  // every worker's speed predicted, the batches allocated.
  auto rebalance = [&](Subject& subject, int64_t t) {
    for (int64_t w = 0; w < workers; ++w) {
      predict::Observation o = history[t][w];
      o.batch = subject.batches[w];
      subject.predictors[w]->Observe(o);
    }
    for (int64_t w = 0; w < workers; ++w) speed[w] = subject.predictors[w]->Predict();
    subject.batches = predict::AnalyticBatches(batch * workers, speed, subject.batches, caps);
    checksum += static_cast<double>(subject.batches[0]);
  };
  for (Subject& subject : subjects) {
    for (int64_t t = 0; t < warmup; ++t) rebalance(subject, t);
  }
  // Rounds alternate between gradient steps and each predictor's
  // rebalances, so that a burst of load elsewhere on the machine slows both
  // sides of a ratio; the medians over the rounds are printed.
  std::vector<double> step_s;
  for (int round = 0; round < rounds; ++round) {
    Clock::time_point start = Clock::now();
    for (int i = 0; i < steps_per_round; ++i) job->Step();
    const double step = Seconds(start) / steps_per_round;
    step_s.push_back(step);
    const int64_t first = warmup + round * per_round;
    for (Subject& subject : subjects) {
      start = Clock::now();
      for (int64_t t = first; t < first + per_round; ++t) rebalance(subject, t);
      const double per_rebalance = Seconds(start) / static_cast<double>(per_round);
      subject.rebalance_s.push_back(per_rebalance);
      subject.ratios.push_back(per_rebalance / step);
    }
  }

  std::printf("gradient step (mlp:128, batch %lld): %.3f ms (median of %d rounds)\n",
              static_cast<long long>(batch), Median(step_s) * 1e3, rounds);
  bool all_under = true;
  for (const Subject& subject : subjects) {
    const double percent = 100.0 * Median(subject.ratios);
    all_under = all_under && percent < 1.0;
    std::printf(
        "%-6s per rebalance (%lld workers observe + predict + allocate): %8.2f us  "
        "overhead: %.4f%% of a step\n",
        subject.name, static_cast<long long>(workers), Median(subject.rebalance_s) * 1e6, percent);
  }
  std::printf(
      "%s (checksum %.0f)\n",
      all_under ? "every predictor under 1% of a step" : "some predictor at or over 1% of a step",
      checksum);
  return 0;
}
