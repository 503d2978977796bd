#include "dmlps/predict/predictor.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <random>
#include <system_error>

namespace dmlps::predict {
namespace {

// The shortest text that reads back as `value`, for error messages.
std::string FormatDouble(double value) {
  char buffer[64];
  const std::to_chars_result r = std::to_chars(buffer, buffer + sizeof(buffer), value);
  if (r.ec != std::errc()) return "?";
  return std::string(buffer, r.ptr);
}

bool PositiveFinite(double value) { return value > 0 && std::isfinite(value); }

// Small matrices (at most 32 x 32: the regressions of ARIMA), on the stack.
using SmallMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::ColMajor, 32, 32>;
using SmallVector = Eigen::Matrix<double, Eigen::Dynamic, 1, Eigen::ColMajor, 32, 1>;

// Least squares with a ridge of 1e-3 of the mean diagonal of A'A: it leaves
// well-posed fits as they are and keeps a collinear one (a window of almost
// equal speeds) from blowing up. REQUIRES: 1 <= a.cols() <= 32.
SmallVector RidgeSolve(const Eigen::MatrixXd& a, const Eigen::Ref<const Eigen::VectorXd>& y) {
  const Eigen::Index k = a.cols();
  // Column by column: for these thin matrices dot products beat a general
  // matrix product, which would allocate its blocks.
  SmallMatrix gram(k, k);
  SmallVector right(k);
  for (Eigen::Index i = 0; i < k; ++i) {
    for (Eigen::Index j = 0; j <= i; ++j) gram(i, j) = gram(j, i) = a.col(i).dot(a.col(j));
    right(i) = a.col(i).dot(y);
  }
  const double lambda = 1e-3 * gram.trace() / static_cast<double>(k) + 1e-12;
  gram.diagonal().array() += lambda;
  return Eigen::LDLT<SmallMatrix>(gram).solve(right);
}

// The long autoregression behind the innovations of ARIMA(p, d, q).
int64_t LongArOrder(int64_t p, int64_t q) { return q > 0 ? std::max<int64_t>(4, 2 * (p + q)) : 0; }

// The median of *values, which it reorders; 0 when empty.
double Median(std::vector<double>* values) {
  if (values->empty()) return 0;
  const auto mid = values->begin() + static_cast<std::ptrdiff_t>(values->size() / 2);
  std::nth_element(values->begin(), mid, values->end());
  if (values->size() % 2 == 1) return *mid;
  return (*mid + *std::max_element(values->begin(), mid)) / 2;
}

// NARX settings. Inputs are normalised and then clipped to +-kInputClip; the
// network's correction is clipped to +-kOutputClip scales; a training
// target to +-kTargetClip, and its error enters a Huber loss that is linear
// beyond kHuber, so that one wild step cannot drag the weights far.
constexpr int64_t kReplay = 16;
constexpr size_t kScaleWindow = 32;
constexpr double kInputClip = 5;
constexpr double kOutputClip = 3;
constexpr double kTargetClip = 10;
constexpr float kHuber = 1;
constexpr double kScaleFloor = 0.01;  // 1% in log speed
constexpr double kStatRate = 0.05;
constexpr double kLevelRate = 0.5;
constexpr float kLearningRate = 0.002f;
constexpr float kWeightDecay = 1e-4f;
constexpr float kBeta1 = 0.9f;
constexpr float kBeta2 = 0.999f;
constexpr float kAdamEpsilon = 1e-8f;

// One Adam step with decoupled weight decay on a block of parameters.
template <typename Param, typename Grad>
void AdamUpdate(Param& param, Eigen::ArrayXXf& m, Eigen::ArrayXXf& v, const Grad& grad,
                float correction1, float correction2, float decay) {
  m = kBeta1 * m + (1 - kBeta1) * grad.array();
  v = kBeta2 * v + (1 - kBeta2) * grad.array().square();
  param.array() -= kLearningRate * ((m / correction1) / ((v / correction2).sqrt() + kAdamEpsilon) +
                                    decay * param.array());
}

}  // namespace

void EmaPredictor::Observe(const Observation& observation) {
  // Seeding with the first speed keeps the average from starting at 0 and
  // creeping up over the first 1 / alpha steps.
  if (!seeded_) {
    value_ = observation.speed;
    seeded_ = true;
    return;
  }
  value_ = alpha_ * observation.speed + (1 - alpha_) * value_;
}

// --- ARIMA ------------------------------------------------------------------

ArimaPredictor::ArimaPredictor(int64_t p, int64_t d, int64_t q, int64_t window)
    : p_(p), d_(d), q_(q), window_(window), history_(static_cast<size_t>(window)) {}

int64_t ArimaPredictor::MinHistory(int64_t p, int64_t d, int64_t q) {
  // Enough rows for each regression to have twice as many equations as
  // unknowns, and a few to spare.
  const int64_t m = LongArOrder(p, q);
  const int64_t first_row = std::max(p, m + q);
  const int64_t need = std::max(first_row + 2 * (p + q) + 4, q > 0 ? 3 * m + 4 : 0);
  return need + d;
}

void ArimaPredictor::Observe(const Observation& observation) {
  if (!PositiveFinite(observation.speed)) return;
  if (size_ < window_) {
    history_[(start_ + size_) % window_] = observation.speed;
    ++size_;
  } else {
    history_[start_] = observation.speed;
    start_ = (start_ + 1) % window_;
  }
  Fit();
}

void ArimaPredictor::Fit() {
  const auto at = [this](int64_t i) { return history_[(start_ + i) % window_]; };
  const double last = at(size_ - 1);
  prediction_ = last;
  fitted_ = false;
  if (size_ < MinHistory(p_, d_, q_)) return;

  // x: the series differenced d times, centred (d = 0) and scaled to unit
  // RMS, so that the ridge means the same at every speed.
  const Eigen::Index n = size_ - d_;
  Eigen::VectorXd& x = series_;
  x.resize(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    x(i) = d_ == 0 ? at(i) : d_ == 1 ? at(i + 1) - at(i) : at(i + 2) - 2 * at(i + 1) + at(i);
  }
  const double mean = d_ == 0 ? x.mean() : 0.0;
  x.array() -= mean;
  const double rms = std::sqrt(x.squaredNorm() / static_cast<double>(n));

  double next_x = 0;
  ar_.assign(p_, 0.0);
  ma_.assign(q_, 0.0);
  // Below this the window is constant up to rounding: nothing to fit.
  const bool varies = rms > 1e-12 * std::abs(last) && std::isfinite(rms);
  if (varies && p_ + q_ > 0) {
    x /= rms;
    // Innovations: the residuals of a long autoregression (0 before it can
    // be evaluated; no row of the main fit reads those).
    const int64_t m = LongArOrder(p_, q_);
    innovation_.setZero(n);
    if (q_ > 0) {
      const Eigen::Index rows = n - m;
      long_regressors_.resize(rows, m);
      for (Eigen::Index j = 0; j < m; ++j) long_regressors_.col(j) = x.segment(m - 1 - j, rows);
      const SmallVector coefficients = RidgeSolve(long_regressors_, x.tail(rows));
      innovation_.tail(rows) = x.tail(rows);
      innovation_.tail(rows).noalias() -= long_regressors_ * coefficients;
    }
    // Each value on its p predecessors and the q innovations before it.
    const Eigen::Index first = std::max(p_, m + q_);
    const Eigen::Index rows = n - first;
    regressors_.resize(rows, p_ + q_);
    for (Eigen::Index i = 0; i < p_; ++i) regressors_.col(i) = x.segment(first - 1 - i, rows);
    for (Eigen::Index j = 0; j < q_; ++j) {
      regressors_.col(p_ + j) = innovation_.segment(first - 1 - j, rows);
    }
    const SmallVector beta = RidgeSolve(regressors_, x.tail(rows));
    for (Eigen::Index i = 0; i < p_; ++i) {
      ar_[i] = beta(i);
      next_x += beta(i) * x(n - 1 - i);
    }
    for (Eigen::Index j = 0; j < q_; ++j) {
      ma_[j] = beta(p_ + j);
      next_x += beta(p_ + j) * innovation_(n - 1 - j);
    }
  }
  // Undifference: y[T+1] = z[T+1] + sum_k (-1)^(k+1) C(d, k) y[T+1-k].
  double next = mean + (varies ? next_x * rms : 0.0);
  if (d_ == 1) next += last;
  if (d_ == 2) next += 2 * last - at(size_ - 2);
  double low = last;
  double high = last;
  for (int64_t i = 0; i < size_; ++i) {
    low = std::min(low, at(i));
    high = std::max(high, at(i));
  }
  next = std::clamp(next, low / 2, high * 2);
  if (!PositiveFinite(next)) return;
  prediction_ = next;
  fitted_ = true;
}

// --- NARX -------------------------------------------------------------------

void NarxPredictor::Stat::Add(double value) {
  if (!seeded) {
    mean = value;
    deviation = 0;
    seeded = true;
    return;
  }
  deviation += kStatRate * (std::abs(value - mean) - deviation);
  mean += kStatRate * (value - mean);
}

double NarxPredictor::Stat::Normalise(double value, double floor) const {
  const double normalised = (value - mean) / std::max(deviation, floor);
  return std::isfinite(normalised) ? std::clamp(normalised, -kInputClip, kInputClip) : 0.0;
}

NarxPredictor::NarxPredictor(int64_t lags, int64_t hidden, uint64_t seed) : lags_(lags) {
  const Eigen::Index inputs = 4 * lags;
  std::mt19937_64 random(seed);
  // Uniform with variance 1 / inputs: the hidden units start in tanh's
  // linear range. The output layer starts at zero, so an untrained network
  // adds nothing to the base forecast.
  const double bound = std::sqrt(3.0 / static_cast<double>(inputs));
  std::uniform_real_distribution<double> uniform(-bound, bound);
  w1_.resize(hidden, inputs);
  for (Eigen::Index i = 0; i < w1_.size(); ++i) w1_.data()[i] = static_cast<float>(uniform(random));
  b1_ = Eigen::VectorXf::Zero(hidden);
  w2_ = Eigen::VectorXf::Zero(hidden);
  for (Moments* moments : {&adam_w1_, &adam_b1_, &adam_w2_}) {
    const Eigen::Index cols = moments == &adam_w1_ ? inputs : 1;
    moments->m = Eigen::ArrayXXf::Zero(hidden, cols);
    moments->v = Eigen::ArrayXXf::Zero(hidden, cols);
  }
  replay_inputs_ = Eigen::MatrixXf::Zero(inputs, kReplay);
  replay_targets_ = Eigen::RowVectorXf::Zero(kReplay);
  pending_input_ = Eigen::VectorXf::Zero(inputs);
  hidden_ = Eigen::MatrixXf::Zero(hidden, kReplay);
  grad_hidden_ = Eigen::MatrixXf::Zero(hidden, kReplay);
  grad_w1_ = Eigen::MatrixXf::Zero(hidden, inputs);
  grad_b1_ = grad_w2_ = hidden_one_ = Eigen::VectorXf::Zero(hidden);
  output_ = Eigen::RowVectorXf::Zero(kReplay);
  sorted_changes_.reserve(kScaleWindow);
}

void NarxPredictor::BuildInput(double base, double scale) {
  // Lag i is the value i steps back; before there are `lags` of them the
  // oldest stands in for the missing ones.
  const auto lag = [](const std::deque<double>& values, int64_t i) {
    const int64_t size = static_cast<int64_t>(values.size());
    return values[static_cast<size_t>(std::max<int64_t>(0, size - 1 - i))];
  };
  Eigen::VectorXf& input = pending_input_;
  for (int64_t i = 0; i < lags_; ++i) {
    const double speed = std::clamp((lag(log_speed_, i) - base) / scale, -kInputClip, kInputClip);
    input(i) = static_cast<float>(speed);
    input(lags_ + i) = static_cast<float>(cpu_stat_.Normalise(lag(cpu_, i), 0.05));
    input(2 * lags_ + i) = static_cast<float>(memory_stat_.Normalise(lag(memory_, i), 0.01));
    input(3 * lags_ + i) = static_cast<float>(batch_stat_.Normalise(lag(batch_, i), 0.05));
  }
}

void NarxPredictor::Train() {
  const Eigen::Index n = replay_size_;
  const auto inputs = replay_inputs_.leftCols(n);
  auto hidden = hidden_.leftCols(n);
  // Coefficient-based products (lazyProduct): at these sizes a general
  // matrix product costs more in setting up its blocks than in arithmetic.
  hidden.noalias() = w1_.lazyProduct(inputs);
  hidden.colwise() += b1_;
  hidden = hidden.array().tanh().matrix();
  // The Huber loss's gradient with respect to each output: the error,
  // clipped, over the number of pairs.
  auto grad_output = output_.head(n);
  grad_output.noalias() = w2_.transpose().lazyProduct(hidden);
  grad_output.array() += b2_;
  grad_output = ((grad_output - replay_targets_.head(n)).array().max(-kHuber).min(kHuber) /
                 static_cast<float>(n))
                    .matrix();
  grad_w2_.noalias() = hidden.lazyProduct(grad_output.transpose());
  const float grad_b2 = grad_output.sum();
  auto grad_hidden = grad_hidden_.leftCols(n);
  grad_hidden.noalias() = w2_.lazyProduct(grad_output);
  grad_hidden.array() *= 1 - hidden.array().square();
  grad_w1_.noalias() = grad_hidden.lazyProduct(inputs.transpose());
  grad_b1_ = grad_hidden.rowwise().sum();

  ++adam_steps_;
  const float correction1 = 1 - std::pow(kBeta1, static_cast<float>(adam_steps_));
  const float correction2 = 1 - std::pow(kBeta2, static_cast<float>(adam_steps_));
  AdamUpdate(w1_, adam_w1_.m, adam_w1_.v, grad_w1_, correction1, correction2, kWeightDecay);
  AdamUpdate(b1_, adam_b1_.m, adam_b1_.v, grad_b1_, correction1, correction2, 0.0f);
  AdamUpdate(w2_, adam_w2_.m, adam_w2_.v, grad_w2_, correction1, correction2, kWeightDecay);
  adam_b2_m_ = kBeta1 * adam_b2_m_ + (1 - kBeta1) * grad_b2;
  adam_b2_v_ = kBeta2 * adam_b2_v_ + (1 - kBeta2) * grad_b2 * grad_b2;
  b2_ -= kLearningRate * (adam_b2_m_ / correction1) /
         (std::sqrt(adam_b2_v_ / correction2) + kAdamEpsilon);
}

void NarxPredictor::Observe(const Observation& observation) {
  if (!PositiveFinite(observation.speed)) return;
  const double log_speed = std::log(observation.speed);

  // The forecast made before this step can now be scored: train on it.
  if (has_pending_) {
    const double target =
        std::clamp((log_speed - pending_base_) / pending_scale_, -kTargetClip, kTargetClip);
    replay_inputs_.col(replay_next_) = pending_input_;
    replay_targets_(replay_next_) = static_cast<float>(target);
    replay_next_ = (replay_next_ + 1) % kReplay;
    replay_size_ = std::min<int64_t>(replay_size_ + 1, kReplay);
    Train();
  }

  if (!log_speed_.empty()) {
    abs_changes_.push_back(std::abs(log_speed - log_speed_.back()));
    if (abs_changes_.size() > kScaleWindow) abs_changes_.pop_front();
  }
  const double cpu = std::isfinite(observation.cpu) ? observation.cpu : 0.0;
  const double memory =
      std::log1p(std::isfinite(observation.memory) ? std::max(0.0, observation.memory) : 0.0);
  const double batch = std::log1p(static_cast<double>(std::max<int64_t>(0, observation.batch)));
  const size_t keep = static_cast<size_t>(lags_);
  log_speed_.push_back(log_speed);
  cpu_.push_back(cpu);
  memory_.push_back(memory);
  batch_.push_back(batch);
  if (log_speed_.size() > std::max<size_t>(keep, 3)) log_speed_.pop_front();
  for (std::deque<double>* values : {&cpu_, &memory_, &batch_}) {
    if (values->size() > keep) values->pop_front();
  }
  cpu_stat_.Add(cpu);
  memory_stat_.Add(memory);
  batch_stat_.Add(batch);

  // The base: an exponential moving average of the median of the last three
  // log speeds (of two: their mean). The median never sees a one-step spike
  // and shows a lasting change from its second step on; the average smooths
  // what is left of the noise.
  const size_t size = log_speed_.size();
  double median = log_speed_[size - 1];
  if (size == 2) median = (log_speed_[0] + log_speed_[1]) / 2;
  if (size >= 3) {
    const double a = log_speed_[size - 1], b = log_speed_[size - 2], c = log_speed_[size - 3];
    median = std::max(std::min(a, b), std::min(std::max(a, b), c));
  }
  level_ = has_level_ ? level_ + kLevelRate * (median - level_) : median;
  has_level_ = true;
  const double base = level_;
  // The scale: the median step-to-step change, floored.
  sorted_changes_.assign(abs_changes_.begin(), abs_changes_.end());
  const double scale = std::max(Median(&sorted_changes_), kScaleFloor);

  BuildInput(base, scale);
  pending_base_ = base;
  pending_scale_ = scale;
  has_pending_ = true;
  hidden_one_.noalias() = w1_ * pending_input_;
  hidden_one_ = (hidden_one_ + b1_).array().tanh().matrix();
  const double output = static_cast<double>(w2_.dot(hidden_one_) + b2_);
  const double correction =
      std::isfinite(output) ? std::clamp(output, -kOutputClip, kOutputClip) : 0.0;
  prediction_ = std::exp(base + scale * correction);
  if (!PositiveFinite(prediction_)) prediction_ = observation.speed;
}

// --- Making predictors -------------------------------------------------------

std::string_view PredictorNames() { return "last, ema, arima, narx"; }

Status ValidatePredictorOptions(std::string_view name, const PredictorOptions& options) {
  if (name == "ema") {
    // Written so that NaN fails too.
    if (!(options.ema_alpha > 0 && options.ema_alpha <= 1)) {
      return Status::InvalidArgument("the ema predictor needs an alpha in (0, 1], not " +
                                     FormatDouble(options.ema_alpha));
    }
  } else if (name == "arima") {
    const int64_t p = options.arima_p, d = options.arima_d, q = options.arima_q;
    if (p < 0 || p > 8 || d < 0 || d > 2 || q < 0 || q > 8) {
      return Status::InvalidArgument(
          "the arima predictor needs p in [0, 8], d in [0, 2], q in [0, 8], not " +
          std::to_string(p) + "," + std::to_string(d) + "," + std::to_string(q));
    }
    const int64_t need = ArimaPredictor::MinHistory(p, d, q);
    if (options.arima_window < need || options.arima_window > 100000) {
      return Status::InvalidArgument("the arima(" + std::to_string(p) + "," + std::to_string(d) +
                                     "," + std::to_string(q) + ") predictor needs a window of " +
                                     std::to_string(need) + " to 100000 steps, not " +
                                     std::to_string(options.arima_window));
    }
  } else if (name == "narx") {
    if (options.narx_lags < 1 || options.narx_lags > 64) {
      return Status::InvalidArgument("the narx predictor needs 1 to 64 lags, not " +
                                     std::to_string(options.narx_lags));
    }
    if (options.narx_hidden < 1 || options.narx_hidden > 256) {
      return Status::InvalidArgument("the narx predictor needs 1 to 256 hidden units, not " +
                                     std::to_string(options.narx_hidden));
    }
  } else if (name != "last") {
    return Status::InvalidArgument("unknown speed predictor '" + std::string(name) +
                                   "' (expected last, ema, arima or narx)");
  }
  return Status::Ok();
}

Result<std::unique_ptr<SpeedPredictor>> MakePredictor(std::string_view name,
                                                      const PredictorOptions& options) {
  if (Status s = ValidatePredictorOptions(name, options); !s.ok()) return s;
  using Made = std::unique_ptr<SpeedPredictor>;
  if (name == "ema") return Made(new EmaPredictor(options.ema_alpha));
  if (name == "arima") {
    return Made(new ArimaPredictor(options.arima_p, options.arima_d, options.arima_q,
                                   options.arima_window));
  }
  if (name == "narx")
    return Made(new NarxPredictor(options.narx_lags, options.narx_hidden, options.seed));
  return Made(new LastValuePredictor());
}

Result<std::unique_ptr<SpeedPredictor>> MakePredictor(std::string_view name, double alpha) {
  PredictorOptions options;
  options.ema_alpha = alpha;
  return MakePredictor(name, options);
}

Status ParseArimaOrder(std::string_view text, PredictorOptions* options) {
  int64_t values[3] = {0, 0, 0};
  const char* at = text.data();
  const char* const end = text.data() + text.size();
  bool ok = true;
  for (int i = 0; i < 3 && ok; ++i) {
    const auto [next, ec] = std::from_chars(at, end, values[i]);
    ok = ec == std::errc() && next != at && (i < 2 ? next != end && *next == ',' : next == end);
    at = next + (i < 2 ? 1 : 0);
  }
  if (!ok) {
    std::string message = "'";
    message.append(text);
    message.append("' is not an ARIMA order P,D,Q of three integers");
    return Status::InvalidArgument(std::move(message));
  }
  options->arima_p = values[0];
  options->arima_d = values[1];
  options->arima_q = values[2];
  return Status::Ok();
}

}  // namespace dmlps::predict
