// Predicting a worker's speed (samples per second) from its history, for
// LB-BSP's batch sizes and for dmlps-predict.
#ifndef DMLPS_PREDICT_PREDICTOR_H_
#define DMLPS_PREDICT_PREDICTOR_H_

#include <Eigen/Dense>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/base/status.h"

namespace dmlps::predict {

// One step of a worker's history.
struct Observation {
  double speed = 0;   // samples per second in the step
  double cpu = 0;     // the worker's CPU usage, 0..1 per core (0 when unknown)
  double memory = 0;  // the worker's resident memory, bytes (0 when unknown)
  int64_t batch = 0;  // samples in the step
};

class SpeedPredictor {
 public:
  virtual ~SpeedPredictor() = default;
  virtual std::string Name() const = 0;
  // Takes one step of history, oldest first. A speed that is not a positive
  // finite number is ignored by the model-based predictors.
  virtual void Observe(const Observation& observation) = 0;
  // The predicted speed of the next step: 0 before any observation, else a
  // positive finite number.
  virtual double Predict() const = 0;
};

// The next speed is the last one seen (memoryless).
class LastValuePredictor : public SpeedPredictor {
 public:
  std::string Name() const override { return "last"; }
  void Observe(const Observation& observation) override { last_ = observation.speed; }
  double Predict() const override { return last_; }

 private:
  double last_ = 0;
};

// Exponential moving average: p <- alpha * speed + (1 - alpha) * p, seeded by
// the first observation.
class EmaPredictor : public SpeedPredictor {
 public:
  explicit EmaPredictor(double alpha) : alpha_(alpha) {}
  std::string Name() const override { return "ema"; }
  void Observe(const Observation& observation) override;
  double Predict() const override { return value_; }

 private:
  double alpha_;
  double value_ = 0;
  bool seeded_ = false;
};

// ARIMA(p, d, q) refitted at every observation over the last `window` steps
// by the Hannan-Rissanen method: the series is differenced d times (and, for
// d = 0, centred on its window mean); a long autoregression gives estimates
// of the innovations; then a ridge-regularised least-squares fit of each
// value on its p predecessors and the q previous innovations gives the AR
// coefficients phi and the MA coefficients theta. The forecast is
// undifferenced and clamped to [min / 2, 2 max] of the window. Until the
// window holds enough history to fit (MinHistory), and whenever a forecast is
// not a positive finite number, it predicts the last speed.
class ArimaPredictor : public SpeedPredictor {
 public:
  // REQUIRES: ValidArimaOrder(p, d, q, window) (MakePredictor checks).
  ArimaPredictor(int64_t p, int64_t d, int64_t q, int64_t window);
  std::string Name() const override { return "arima"; }
  void Observe(const Observation& observation) override;
  double Predict() const override { return prediction_; }

  // The coefficients of the last fit (empty before the first); phi_1 first.
  const std::vector<double>& ar() const { return ar_; }
  const std::vector<double>& ma() const { return ma_; }
  // Whether the last prediction came from a fitted model.
  bool fitted() const { return fitted_; }
  // Steps of history the first fit needs.
  static int64_t MinHistory(int64_t p, int64_t d, int64_t q);

 private:
  void Fit();

  int64_t p_, d_, q_, window_;
  // The last `window` speeds, a ring: history_[(start_ + i) % window] is the
  // i-th oldest.
  std::vector<double> history_;
  int64_t start_ = 0;
  int64_t size_ = 0;
  std::vector<double> ar_, ma_;
  bool fitted_ = false;
  double prediction_ = 0;
  // Scratch space, kept between fits so that a fit allocates nothing.
  Eigen::VectorXd series_, innovation_;
  Eigen::MatrixXd long_regressors_, regressors_;
};

// NARX: a nonlinear autoregressive network with exogenous inputs. It works
// on log speeds, so that one model serves speeds from 10 to 1e6 samples/s.
// The forecast is a robust level plus a learned correction. The level is an
// exponential moving average (weight 1/2) of the median of the last three log
// speeds: blind to a one-step spike, and on a lasting change moving from the
// change's second step on. The correction comes from a one-hidden-layer tanh
// network whose inputs are `lags` past log speeds relative to the level and
// `lags` past values of each exogenous input (CPU use, log memory, log
// batch), all normalised by running statistics and clipped. The network
// starts with a zero output layer and is trained online, after every
// observation, by one Adam step on a Huber loss over its last 16 (input, next
// speed) pairs; its correction is clipped to 3 times the typical step-to-step
// change of the log speed, so the forecast is always finite and positive.
// Deterministic for a given seed.
class NarxPredictor : public SpeedPredictor {
 public:
  // REQUIRES: lags in [1, 64], hidden in [1, 256] (MakePredictor checks).
  NarxPredictor(int64_t lags, int64_t hidden, uint64_t seed);
  std::string Name() const override { return "narx"; }
  void Observe(const Observation& observation) override;
  double Predict() const override { return prediction_; }

 private:
  // Running mean and mean absolute deviation of an input, seeded with its
  // first value.
  struct Stat {
    double mean = 0;
    double deviation = 0;
    bool seeded = false;
    void Add(double value);
    // (value - mean) / deviation, the deviation floored at `floor`, clipped.
    double Normalise(double value, double floor) const;
  };
  // Adam moments of one block of parameters.
  struct Moments {
    Eigen::ArrayXXf m, v;
  };
  void Train();
  void BuildInput(double base, double scale);

  int64_t lags_;
  // Network (single precision: tanh vectorises): hidden = tanh(w1 * input
  // + b1); output = w2 . hidden + b2.
  Eigen::MatrixXf w1_;
  Eigen::VectorXf b1_, w2_;
  float b2_ = 0;
  Moments adam_w1_, adam_b1_, adam_w2_;
  float adam_b2_m_ = 0, adam_b2_v_ = 0;
  int64_t adam_steps_ = 0;

  // History, newest last, at most `lags` long (log speeds: at least 3).
  std::deque<double> log_speed_, cpu_, memory_, batch_;
  std::deque<double> abs_changes_;  // |change of the log speed|, the last 32
  std::vector<double> sorted_changes_;
  Stat cpu_stat_, memory_stat_, batch_stat_;
  // Training pairs: inputs (columns) and targets, a ring.
  Eigen::MatrixXf replay_inputs_;
  Eigen::RowVectorXf replay_targets_;
  int64_t replay_size_ = 0;
  int64_t replay_next_ = 0;
  // The input and normalisation behind the current forecast, for training
  // once the next speed is known.
  Eigen::VectorXf pending_input_;
  double pending_base_ = 0;
  double pending_scale_ = 1;
  bool has_pending_ = false;
  double level_ = 0;  // the base of the forecasts, a log speed
  bool has_level_ = false;
  double prediction_ = 0;
  // Scratch space for training, kept so that a step allocates nothing.
  Eigen::MatrixXf hidden_, grad_hidden_, grad_w1_;
  Eigen::VectorXf grad_b1_, grad_w2_, hidden_one_;
  Eigen::RowVectorXf output_;
};

// The settings of the predictors.
struct PredictorOptions {
  double ema_alpha = 0.5;     // ema: weight of the newest speed, (0, 1]
  int64_t arima_p = 2;        // arima: autoregressive lags, 0 to 8
  int64_t arima_d = 0;        // arima: differencing, 0 to 2
  int64_t arima_q = 1;        // arima: moving-average lags, 0 to 8
  int64_t arima_window = 64;  // arima: steps each fit looks back over
  int64_t narx_lags = 4;      // narx: lags of the speed and of each exogenous input, 1 to 64
  int64_t narx_hidden = 8;    // narx: tanh units, 1 to 256
  uint64_t seed = 1;          // narx: initial weights
};

// Checks the settings that `name` uses; InvalidArgument says what is wrong.
Status ValidatePredictorOptions(std::string_view name, const PredictorOptions& options);

// "last", "ema", "arima" or "narx" with `options`; InvalidArgument for an
// unknown name (naming those) or settings that do not fit it.
Result<std::unique_ptr<SpeedPredictor>> MakePredictor(std::string_view name,
                                                      const PredictorOptions& options);
// The same with the default options but for the EMA's alpha.
Result<std::unique_ptr<SpeedPredictor>> MakePredictor(std::string_view name, double alpha);

// The names MakePredictor accepts, for help texts: "last, ema, arima, narx".
std::string_view PredictorNames();

// Parses an ARIMA order "P,D,Q" into options->arima_p, _d and _q.
// InvalidArgument for anything but three integers in range.
Status ParseArimaOrder(std::string_view text, PredictorOptions* options);

}  // namespace dmlps::predict

#endif  // DMLPS_PREDICT_PREDICTOR_H_
