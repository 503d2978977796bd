#include "dmlps/predict/predictor.h"

#include <charconv>
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

Result<std::unique_ptr<SpeedPredictor>> MakePredictor(std::string_view name, double alpha) {
  using Made = std::unique_ptr<SpeedPredictor>;
  if (name == "last") return Made(new LastValuePredictor());
  if (name == "ema") {
    // Written so that NaN fails too.
    if (!(alpha > 0 && alpha <= 1)) {
      return Status::InvalidArgument("the ema predictor needs an alpha in (0, 1], not " +
                                     FormatDouble(alpha));
    }
    return Made(new EmaPredictor(alpha));
  }
  return Status::InvalidArgument("unknown speed predictor '" + std::string(name) +
                                 "' (expected last or ema)");
}

}  // namespace dmlps::predict
