#include "server/step_clip.h"

#include <cmath>

namespace dmlps::server {

void StepClip::Prepare(StepVerdict& verdict, const proto::ChunkLayout& layout) const {
  verdict.clip = true;
  verdict.shared = static_cast<bool>(report_);
  verdict.norm_lanes_left = layout.count();
  verdict.squares.assign(StepVerdict::Slot(layout.count(), layout.size) + 1, 0.0);
}

void StepClip::Summed(StepVerdict& verdict) const {
  if (--verdict.norm_lanes_left != 0 || !verdict.shared) return;
  double squares = 0;  // in slot order, as Clip sums
  for (const double s : verdict.squares) squares += s;
  report_(verdict.step.number, squares);
}

void StepClip::Clip(StepVerdict& verdict) const {
  if (verdict.clipped) return;
  verdict.clipped = true;
  // Summed in slot order: the same norm whatever the threads did.
  double squares = 0;
  for (const double s : verdict.squares) squares += s;
  if (verdict.shared) squares = *verdict.global_squares;
  const double norm = std::abs(static_cast<double>(verdict.step.scale)) * std::sqrt(squares);
  const double factor = clip_norm_ / (norm + 1e-6);
  if (factor < 1) verdict.step.scale = static_cast<float>(verdict.step.scale * factor);
}

}  // namespace dmlps::server
