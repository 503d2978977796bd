// Predicting a worker's speed (samples per second) from its history, for
// LB-BSP's batch sizes and for dmlps-predict.
#ifndef DMLPS_PREDICT_PREDICTOR_H_
#define DMLPS_PREDICT_PREDICTOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "dmlps/base/status.h"

namespace dmlps::predict {

// One step of a worker's history.
struct Observation {
  double speed = 0;    // samples per second in the step
  double cpu = 0;      // the worker's CPU usage, 0..1 per core (0 when unknown)
  double memory = 0;   // the worker's resident memory, bytes (0 when unknown)
  int64_t batch = 0;   // samples in the step
};

class SpeedPredictor {
 public:
  virtual ~SpeedPredictor() = default;
  virtual std::string Name() const = 0;
  // Takes one step of history, oldest first.
  virtual void Observe(const Observation& observation) = 0;
  // The predicted speed of the next step; 0 before any observation.
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

// "last" or "ema" (with alpha in (0, 1]); InvalidArgument otherwise.
Result<std::unique_ptr<SpeedPredictor>> MakePredictor(std::string_view name, double alpha);

}  // namespace dmlps::predict

#endif  // DMLPS_PREDICT_PREDICTOR_H_
