// The speed predictors (last value, EMA, ARIMA, NARX) on synthetic series
// whose answers are known, and dmlps-predict's replay: histories taken out of
// trace records, the scores, the change and spike definitions, the plan and
// the output formats.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "dmlps/predict/batches.h"
#include "dmlps/predict/predictor.h"
#include "dmlps/predict/replay.h"
#include "dmlps/trace/trace.h"

namespace dmlps::predict {
namespace {

const std::vector<std::string> kAll = {"last", "ema", "arima", "narx"};

std::unique_ptr<SpeedPredictor> Make(const std::string& name,
                                     const PredictorOptions& options = PredictorOptions{}) {
  Result<std::unique_ptr<SpeedPredictor>> made = MakePredictor(name, options);
  REQUIRE(made.ok());
  return std::move(made).value();
}

// Standard normal numbers from mt19937_64 (whose output the standard fixes)
// by Box-Muller, so that the series are the same with every library.
class Gaussian {
 public:
  explicit Gaussian(uint64_t seed) : random_(seed) {}
  double Next() {
    const double u1 = (static_cast<double>(random_() >> 11) + 1) * 0x1.0p-53;
    const double u2 = static_cast<double>(random_() >> 11) * 0x1.0p-53;
    return std::sqrt(-2 * std::log(u1)) * std::cos(2 * M_PI * u2);
  }

 private:
  std::mt19937_64 random_;
};

std::vector<Observation> Steps(const std::vector<double>& speed) {
  std::vector<Observation> steps;
  for (double s : speed) steps.push_back({s, 1.0, 6.0e7, 256});
  return steps;
}

// A level with 2% noise: 1000 samples/s, 250 (a 4x slowdown) from step
// `change` on when change >= 0; every `spike_every` steps (if > 0) a step
// 5x slower.
std::vector<double> Series(int64_t length, int64_t change, int64_t spike_every, uint64_t seed) {
  Gaussian noise(seed);
  std::vector<double> speed;
  for (int64_t t = 0; t < length; ++t) {
    double s = (change >= 0 && t >= change ? 250.0 : 1000.0) * (1 + 0.02 * noise.Next());
    if (spike_every > 0 && t % spike_every == spike_every / 2) s /= 5;
    speed.push_back(s);
  }
  return speed;
}

Score ScoreOf(const std::string& name, const std::vector<double>& speed) {
  std::unique_ptr<SpeedPredictor> predictor = Make(name);
  return ScoreForecasts(speed, Replay(predictor.get(), Steps(speed)));
}

// --- The predictors on series with known answers ------------------------------

TEST_CASE("predict: a constant series is forecast exactly by every predictor after warm-up") {
  for (const double speed : {10.0, 27000.0, 1.0e6}) {
    for (const bool varying_inputs : {false, true}) {
      for (const std::string& name : kAll) {
        CAPTURE(speed);
        CAPTURE(varying_inputs);
        CAPTURE(name);
        std::unique_ptr<SpeedPredictor> predictor = Make(name);
        for (int64_t t = 0; t < 200; ++t) {
          // The exogenous inputs may wander; the speed does not.
          const Observation o = varying_inputs
                                    ? Observation{speed, 0.5 + 0.01 * static_cast<double>(t % 7),
                                                  5.0e7 + 1.0e5 * static_cast<double>(t), 100 + t}
                                    : Observation{speed, 1.0, 6.0e7, 256};
          predictor->Observe(o);
          if (t >= 1) CHECK(predictor->Predict() == doctest::Approx(speed).epsilon(1e-12));
        }
        if (name == "arima") CHECK(dynamic_cast<ArimaPredictor&>(*predictor).fitted());
      }
    }
  }
}

TEST_CASE("predict: after a step to a 4x slowdown NARX and EMA follow within a few steps") {
  const std::vector<double> speed = Series(300, 150, 0, 11);
  REQUIRE(FindLastingChanges(speed) == std::vector<int64_t>{150});
  const Score last = ScoreOf("last", speed);
  const Score ema = ScoreOf("ema", speed);
  const Score narx = ScoreOf("narx", speed);
  const Score arima = ScoreOf("arima", speed);
  REQUIRE(last.changes == 1);
  CHECK(last.MeanFollowSteps() == 1);
  // EMA with alpha 1/2: 1/4 + 3/4 * 2^-k of the old speed is within 20% of
  // the new from k = 4 on.
  CHECK(ema.MeanFollowSteps() == 4);
  // NARX's median of three moves at the second step; its level halves the
  // gap at each step after.
  CHECK(narx.MeanFollowSteps() >= 2);
  CHECK(narx.MeanFollowSteps() <= 5);
  // ARIMA gets there too, within the horizon.
  CHECK(arima.MeanFollowSteps() <= kFollowHorizon);
  // And all of them settle at the new level.
  for (const std::string& name : kAll) {
    CAPTURE(name);
    std::unique_ptr<SpeedPredictor> predictor = Make(name);
    const std::vector<double> forecast = Replay(predictor.get(), Steps(speed));
    CHECK(forecast.back() == doctest::Approx(250).epsilon(0.05));
  }
}

TEST_CASE("predict: ARIMA recovers the coefficients of an AR(2) process within 10%") {
  // z[t] = 0.6 z[t-1] - 0.3 z[t-2] + e[t], around 1000 samples/s.
  const double phi1 = 0.6, phi2 = -0.3;
  const int64_t length = 8000;
  Gaussian noise(5);
  PredictorOptions options;
  options.arima_p = 2;
  options.arima_d = 0;
  options.arima_q = 0;
  options.arima_window = length;
  std::unique_ptr<SpeedPredictor> predictor = Make("arima", options);
  auto& arima = dynamic_cast<ArimaPredictor&>(*predictor);
  double z1 = 0, z2 = 0;
  for (int64_t t = 0; t < length; ++t) {
    const double z = phi1 * z1 + phi2 * z2 + noise.Next();
    z2 = z1;
    z1 = z;
    arima.Observe({1000 + 20 * z, 1.0, 6.0e7, 256});
  }
  REQUIRE(arima.fitted());
  REQUIRE(arima.ar().size() == 2);
  CHECK(arima.ma().empty());
  CHECK(arima.ar()[0] == doctest::Approx(phi1).epsilon(0.1));
  CHECK(arima.ar()[1] == doctest::Approx(phi2).epsilon(0.1));
  // The forecast is the model's: 1000 + 20 (phi1 z1 + phi2 z2), nearly.
  CHECK(arima.Predict() == doctest::Approx(1000 + 20 * (phi1 * z1 + phi2 * z2)).epsilon(0.01));
}

TEST_CASE("predict: ARIMA with an MA term and differencing stays sane") {
  // ARIMA(1,1,1) on a random walk: forecasts near the last value.
  PredictorOptions options;
  options.arima_p = 1;
  options.arima_d = 1;
  options.arima_q = 1;
  options.arima_window = 200;
  std::unique_ptr<SpeedPredictor> predictor = Make("arima", options);
  Gaussian noise(9);
  double level = 5000;
  for (int64_t t = 0; t < 1000; ++t) {
    level = std::max(100.0, level + 50 * noise.Next());
    predictor->Observe({level, 1.0, 6.0e7, 256});
    if (t > 10) {
      CHECK(std::isfinite(predictor->Predict()));
      CHECK(std::abs(predictor->Predict() - level) < 300);
    }
  }
  CHECK(dynamic_cast<ArimaPredictor&>(*predictor).ma().size() == 1);
}

TEST_CASE("predict: one-step spikes move NARX and ARIMA less than the last value") {
  const std::vector<double> speed = Series(400, -1, 20, 13);
  const std::vector<int64_t> spikes = FindSpikes(speed);
  REQUIRE(spikes.size() == 20);  // at 10, 30, ..., 390
  CHECK(spikes.front() == 10);
  CHECK(FindLastingChanges(speed).empty());
  const Score last = ScoreOf("last", speed);
  const Score ema = ScoreOf("ema", speed);
  const Score arima = ScoreOf("arima", speed);
  const Score narx = ScoreOf("narx", speed);
  CHECK(last.SpikeMovedPercent() == doctest::Approx(100));
  CHECK(ema.SpikeMovedPercent() == doctest::Approx(50));
  CHECK(arima.SpikeMovedPercent() < 50);
  CHECK(narx.SpikeMovedPercent() < 10);
  // Not chasing the spikes pays off in the error too.
  CHECK(arima.Rmse() < last.Rmse());
  CHECK(narx.Rmse() < last.Rmse());
}

TEST_CASE("predict: NARX forecasts are positive and finite whatever it is fed") {
  std::unique_ptr<SpeedPredictor> narx = Make("narx");
  CHECK(narx->Predict() == 0);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  Gaussian noise(17);
  for (int64_t t = 0; t < 2000; ++t) {
    // Speeds jumping over five orders of magnitude, and garbage now and then.
    double speed = std::pow(10.0, 1 + 5 * std::abs(std::sin(0.37 * static_cast<double>(t))));
    speed *= std::exp(0.5 * noise.Next());
    if (t % 97 == 5) speed = 0;
    if (t % 101 == 7) speed = -3;
    if (t % 103 == 9) speed = nan;
    if (t % 107 == 11) speed = inf;
    const double cpu = t % 13 == 0 ? nan : 0.5 + 0.5 * std::sin(static_cast<double>(t));
    const double memory = t % 17 == 0 ? -1.0 : 6.0e7;
    narx->Observe({speed, cpu, memory, t % 19 == 0 ? 0 : 1 + t % 512});
    CHECK(std::isfinite(narx->Predict()));
    CHECK(narx->Predict() > 0);
  }
}

TEST_CASE("predict: NARX and ARIMA work the same from 10 to 1e6 samples/s") {
  // The same history at two scales: the forecasts differ by the same factor.
  const std::vector<double> speed = Series(300, 150, 20, 21);
  for (const std::string name : {"narx", "arima"}) {
    CAPTURE(name);
    std::unique_ptr<SpeedPredictor> slow = Make(name);
    std::unique_ptr<SpeedPredictor> fast = Make(name);
    for (const double s : speed) {
      slow->Observe({s / 100, 1.0, 6.0e7, 256});   // 2.5 to 10 samples/s
      fast->Observe({s * 1000, 1.0, 6.0e7, 256});  // 2.5e5 to 1e6
      CHECK(fast->Predict() == doctest::Approx(slow->Predict() * 1e5).epsilon(1e-4));
    }
  }
}

TEST_CASE("predict: NARX is deterministic for a seed") {
  const std::vector<double> speed = Series(200, 100, 7, 23);
  PredictorOptions options;
  std::unique_ptr<SpeedPredictor> a = Make("narx", options);
  std::unique_ptr<SpeedPredictor> b = Make("narx", options);
  options.seed = 2;
  std::unique_ptr<SpeedPredictor> c = Make("narx", options);
  bool differs = false;
  for (size_t t = 0; t < speed.size(); ++t) {
    const Observation o{speed[t], 0.3 + 0.1 * static_cast<double>(t % 5), 6.0e7, 256};
    a->Observe(o);
    b->Observe(o);
    c->Observe(o);
    CHECK(a->Predict() == b->Predict());
    differs = differs || a->Predict() != c->Predict();
  }
  CHECK(differs);
}

TEST_CASE("predict: options are checked, and the ARIMA order parsed strictly") {
  PredictorOptions options;
  for (const std::string& name : kAll) CHECK(ValidatePredictorOptions(name, options).ok());
  CHECK(PredictorNames() == "last, ema, arima, narx");

  PredictorOptions bad = options;
  bad.ema_alpha = 0;
  CHECK_FALSE(MakePredictor("ema", bad).ok());
  CHECK(MakePredictor("last", bad).ok());  // a setting only its predictor uses
  // One setting out of range each, refused by the predictor that uses it.
  const std::vector<std::pair<std::string, std::function<void(PredictorOptions*)>>> spoilt = {
      {"arima", [](PredictorOptions* o) { o->arima_p = 9; }},
      {"arima", [](PredictorOptions* o) { o->arima_d = 3; }},
      {"narx", [](PredictorOptions* o) { o->narx_lags = 0; }},
      {"narx", [](PredictorOptions* o) { o->narx_hidden = 257; }}};
  for (const auto& [name, spoil] : spoilt) {
    bad = options;
    spoil(&bad);
    CHECK_FALSE(MakePredictor(name, bad).ok());
  }
  bad = options;
  bad.arima_window = ArimaPredictor::MinHistory(2, 0, 1) - 1;
  Result<std::unique_ptr<SpeedPredictor>> small = MakePredictor("arima", bad);
  REQUIRE_FALSE(small.ok());
  CHECK(small.status().message().find("window") != std::string::npos);
  bad.arima_window = ArimaPredictor::MinHistory(2, 0, 1);
  CHECK(MakePredictor("arima", bad).ok());

  PredictorOptions parsed;
  REQUIRE(ParseArimaOrder("3,1,2", &parsed).ok());
  CHECK(parsed.arima_p == 3);
  CHECK(parsed.arima_d == 1);
  CHECK(parsed.arima_q == 2);
  for (const char* text :
       {"", "3", "3,1", "3,1,2,0", "3,,2", "a,1,2", "3,1,2x", " 3,1,2", "3;1;2"}) {
    CAPTURE(text);
    const Status s = ParseArimaOrder(text, &parsed);
    CHECK(s.code() == StatusCode::kInvalidArgument);
  }
  CHECK(parsed.arima_p == 3);  // left alone on error
}

TEST_CASE("predict: ARIMA predicts the last speed until it has the history to fit") {
  std::unique_ptr<SpeedPredictor> predictor = Make("arima");
  auto& arima = dynamic_cast<ArimaPredictor&>(*predictor);
  const int64_t need = ArimaPredictor::MinHistory(2, 0, 1);
  for (int64_t t = 0; t < need - 1; ++t) {
    arima.Observe({100.0 + static_cast<double>(t % 3), 1.0, 6.0e7, 256});
    CHECK(arima.Predict() == 100.0 + static_cast<double>(t % 3));
    CHECK_FALSE(arima.fitted());
  }
  arima.Observe({101.0, 1.0, 6.0e7, 256});
  CHECK(arima.fitted());
  arima.Observe({-1.0, 1.0, 6.0e7, 256});  // ignored
  CHECK(arima.Predict() > 0);
}

// --- Replaying traces -------------------------------------------------------

constexpr int64_t kT0 = 1'700'000'000'000'000;

trace::Record Span(std::string node, std::string lane, std::string name, int64_t t, int64_t dur,
                   trace::Args args) {
  return {t, std::move(node), std::move(lane), "span", std::move(name), dur, std::move(args)};
}

TEST_CASE("replay: histories come from compute, straggle and push spans by clock") {
  std::vector<trace::Record> records;
  // worker-10 before worker-2 in the input; out in rank order.
  for (const std::string node : {"worker-10", "worker-2"}) {
    for (int64_t clock = 0; clock < 3; ++clock) {
      const int64_t t = kT0 + clock * 100000;
      records.push_back(Span(node, "compute", "step", t, 20000,
                             {{"clock", clock}, {"samples", int64_t{64}}, {"loss", 0.5}}));
      if (clock == 1) {
        records.push_back(Span(node, "compute", "straggle", t + 20000, 60000, {{"clock", clock}}));
      }
      records.push_back(Span(node, "comm", "push", t + 80000, 1000,
                             {{"clock", clock}, {"cpu", 0.9}, {"memory", int64_t{50000000}}}));
    }
  }
  // A chunked step: two compute spans of one clock.
  records.push_back(Span("worker-2", "compute", "step", kT0 + 400000, 10000,
                         {{"clock", int64_t{3}}, {"samples", int64_t{16}}}));
  records.push_back(Span("worker-2", "compute", "step", kT0 + 410000, 10000,
                         {{"clock", int64_t{3}}, {"samples", int64_t{16}}}));
  // A straggle with no step, a step with no samples, a server record: left out.
  records.push_back(
      Span("worker-2", "compute", "straggle", kT0 + 500000, 1000, {{"clock", int64_t{4}}}));
  records.push_back(Span("worker-2", "compute", "step", kT0 + 600000, 1000,
                         {{"clock", int64_t{5}}, {"samples", int64_t{0}}}));
  records.push_back(Span("server-0", "compute", "step", kT0, 1000,
                         {{"clock", int64_t{0}}, {"samples", int64_t{64}}}));

  const std::vector<WorkerHistory> histories = ExtractHistories(records);
  REQUIRE(histories.size() == 2);
  CHECK(histories[0].node == "worker-2");
  CHECK(histories[1].node == "worker-10");
  const WorkerHistory& h = histories[0];
  REQUIRE(h.steps.size() == 4);
  CHECK(h.clocks == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(h.steps[0].speed == doctest::Approx(64 / 0.02));
  CHECK(h.steps[1].speed == doctest::Approx(64 / 0.08));  // straggling counts
  CHECK(h.steps[0].cpu == doctest::Approx(0.9));
  CHECK(h.steps[0].memory == doctest::Approx(5.0e7));
  CHECK(h.steps[0].batch == 64);
  CHECK(h.steps[3].speed == doctest::Approx(32 / 0.02));
  CHECK(h.steps[3].batch == 32);
  CHECK(h.steps[3].cpu == 0);  // no push span for that clock
}

TEST_CASE("replay: RMSE and MAPE of the last value on a series worked out by hand") {
  // Forecasts of the last value: -, 100, 200, 100; errors 100, 100, 50.
  const std::vector<double> speed = {100, 200, 100, 150};
  LastValuePredictor last;
  const std::vector<double> forecast = Replay(&last, Steps(speed));
  CHECK(forecast == std::vector<double>{0, 100, 200, 100, 150});
  const Score s = ScoreForecasts(speed, forecast);
  CHECK(s.steps == 4);
  CHECK(s.predictions == 3);
  CHECK(s.Rmse() == doctest::Approx(std::sqrt((100.0 * 100 + 100 * 100 + 50 * 50) / 3)));
  CHECK(s.MapePercent() == doctest::Approx(100.0 * (100.0 / 200 + 100.0 / 100 + 50.0 / 150) / 3));
  CHECK(s.changes == 0);
  CHECK(std::isnan(s.MeanFollowSteps()));
  CHECK(std::isnan(s.SpikeMovedPercent()));
  Score sum = s;
  sum.Add(s);
  CHECK(sum.Rmse() == doctest::Approx(s.Rmse()));
  CHECK(sum.predictions == 6);
}

TEST_CASE("replay: changes and spikes as dmlps-predict(1) defines them") {
  // Two slow steps in a row are not a one-step spike; one is.
  std::vector<double> speed(40, 1000.0);
  speed[10] = 200;
  speed[20] = 200;
  speed[21] = 200;
  CHECK(FindSpikes(speed) == std::vector<int64_t>{10});
  // A rise by a factor of 2 is a change; one of 1.9 is not.
  std::vector<double> rise(40, 1000.0);
  for (size_t t = 25; t < rise.size(); ++t) rise[t] = 2000;
  CHECK(FindLastingChanges(rise) == std::vector<int64_t>{25});
  for (size_t t = 25; t < rise.size(); ++t) rise[t] = 1900;
  CHECK(FindLastingChanges(rise).empty());
  // Not followed within the horizon: counts kFollowHorizon + 1.
  std::vector<double> step(60, 1000.0);
  for (size_t t = 30; t < step.size(); ++t) step[t] = 250;
  std::vector<double> stuck(step.size() + 1, 1000.0);
  const Score s = ScoreForecasts(step, stuck);
  REQUIRE(s.changes == 1);
  CHECK(s.MeanFollowSteps() == kFollowHorizon + 1);
}

std::vector<trace::Record> RunRecords() {
  // Three workers of 1000, 2000 and 4000 samples/s with 1% wobble.
  std::vector<trace::Record> records;
  const double rate[] = {1000, 2000, 4000};
  for (int64_t w = 0; w < 3; ++w) {
    for (int64_t clock = 0; clock < 60; ++clock) {
      const int64_t samples = 100;
      const double wobble = 1 + 0.01 * static_cast<double>((clock * 7 + w) % 3 - 1);
      const auto dur = static_cast<int64_t>(1e6 * samples / (rate[w] * wobble));
      records.push_back(Span("worker-" + std::to_string(w), "compute", "step", kT0 + clock * 200000,
                             dur, {{"clock", clock}, {"samples", samples}}));
    }
  }
  return records;
}

TEST_CASE(
    "replay: every worker under every predictor, the all rows, and a plan from LB-BSP's code") {
  ReplayOptions options;
  options.plan = 700;
  Result<ReplayReport> report = ReplayTraces(RunRecords(), options);
  REQUIRE(report.ok());
  REQUIRE(report->rows.size() == 3 * 4 + 4);
  CHECK(report->rows[0].node == "worker-0");
  CHECK(report->rows[0].predictor == "last");
  CHECK(report->rows[3].predictor == "narx");
  CHECK(report->rows[12].node == "all");
  for (size_t p = 0; p < 4; ++p) {
    const ReplayRow& all = report->rows[12 + p];
    CAPTURE(all.predictor);
    CHECK(all.score.steps == 180);
    CHECK(all.score.predictions == 177);
    CHECK(all.batch == 700);
    CHECK(all.score.MapePercent() < 3);
    int64_t sum = 0;
    std::vector<double> speed;
    std::vector<int64_t> batch;
    for (size_t w = 0; w < 3; ++w) {
      const ReplayRow& row = report->rows[w * 4 + p];
      sum += row.batch;
      speed.push_back(row.next_speed);
      batch.push_back(row.batch);
    }
    CHECK(sum == 700);
    // 1 : 2 : 4 of 700, and exactly what the policy's allocation gives.
    CHECK(batch[0] == doctest::Approx(100).epsilon(0.03));
    CHECK(batch[2] == doctest::Approx(400).epsilon(0.03));
    CHECK(batch == AnalyticBatches(700, speed, {234, 233, 233}, {0, 0, 0}));
  }

  // Fewer predictors, in the order given.
  options.predictors = {"narx", "last"};
  options.plan = 0;
  report = ReplayTraces(RunRecords(), options);
  REQUIRE(report.ok());
  REQUIRE(report->rows.size() == 3 * 2 + 2);
  CHECK(report->rows[0].predictor == "narx");
  CHECK(report->rows[1].predictor == "last");
  CHECK(report->rows[0].batch == 0);

  // Nothing to replay; bad settings.
  std::vector<trace::Record> server_only = {
      Span("server-0", "apply", "apply", kT0, 10, {{"version", int64_t{1}}})};
  Result<ReplayReport> none = ReplayTraces(server_only, ReplayOptions{});
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().code() == StatusCode::kDataLoss);
  ReplayOptions bad;
  bad.predictor_options.arima_q = 11;
  CHECK(ReplayTraces(RunRecords(), bad).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("replay: predictor lists and formats are parsed strictly") {
  Result<std::vector<std::string>> list = ParsePredictorList("narx,ema");
  REQUIRE(list.ok());
  CHECK(*list == std::vector<std::string>{"narx", "ema"});
  for (const char* text : {"", "narx,", ",ema", "lstm", "ema,ema", "ema;last"}) {
    CAPTURE(text);
    CHECK(ParsePredictorList(text).status().code() == StatusCode::kInvalidArgument);
  }
  CHECK(*ParseReportFormat("table") == ReportFormat::kTable);
  CHECK(*ParseReportFormat("tsv") == ReportFormat::kTsv);
  CHECK(*ParseReportFormat("json") == ReportFormat::kJson);
  CHECK_FALSE(ParseReportFormat("text").ok());
}

TEST_CASE("replay: table, TSV and JSON hold the same rows") {
  ReplayOptions options;
  options.plan = 512;
  Result<ReplayReport> report = ReplayTraces(RunRecords(), options);
  REQUIRE(report.ok());

  std::ostringstream tsv;
  WriteReplayReport(*report, ReportFormat::kTsv, tsv);
  std::istringstream lines(tsv.str());
  std::string line;
  std::getline(lines, line);
  CHECK(line ==
        "node\tpredictor\tsteps\tpredictions\trmse\tmape_pct\tchanges\tfollow_steps\tspikes\t"
        "spike_moved_pct\tnext_speed\tbatch");
  int64_t rows = 0;
  while (std::getline(lines, line)) {
    ++rows;
    CHECK(std::count(line.begin(), line.end(), '\t') == 11);
  }
  CHECK(rows == 16);
  CHECK(tsv.str().find("\nall\tnarx\t180\t177\t") != std::string::npos);
  CHECK(tsv.str().find("\t-\t0\t-\t") != std::string::npos);  // no changes, no spikes

  std::ostringstream out;
  WriteReplayReport(*report, ReportFormat::kJson, out);
  const std::string json = out.str();
  CHECK(json.rfind("{\"plan\":512,\"rows\":[", 0) == 0);
  CHECK(json.find("\"follow_steps\":null") != std::string::npos);
  CHECK(std::count(json.begin(), json.end(), '{') == 17);

  std::ostringstream table;
  WriteReplayReport(*report, ReportFormat::kTable, table);
  CHECK(table.str().rfind("worker ", 0) == 0);
  CHECK(table.str().find("\nall        ema ") != std::string::npos);
  CHECK(table.str().find("batch") != std::string::npos);
}

}  // namespace
}  // namespace dmlps::predict
