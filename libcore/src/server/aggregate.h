// How the pushes of one round are combined into the server's update: their
// mean weighted by samples, or a robust rule that one worker sending garbage
// cannot drag far (docs/algorithms-robustness.md, "Robust aggregation"). The
// coordinate-wise rules are here; centred clipping, which keeps state from
// round to round, is server/centered_clip.h.
#ifndef DMLPS_SERVER_AGGREGATE_H_
#define DMLPS_SERVER_AGGREGATE_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "dmlps/base/status.h"

namespace dmlps::server {

struct Aggregation {
  enum class Rule { kMean, kMedian, kTrimmedMean, kCenteredClip };
  Rule rule = Rule::kMean;
  // kTrimmedMean: the fraction of the values at each end left out, in
  // [0, 0.5).
  double trim = 0;
  // kCenteredClip: the clipping radius (> 0; 0 with `adaptive`), the
  // clipping iterations a round (>= 1), and each worker's momentum (in
  // [0, 1); the server's --momentum, which then moves from its step to the
  // workers). `adaptive` ("cclip:auto"): the momenta are first mixed with
  // their nearest neighbours and the round sets the radius (CenteredClip).
  double radius = 0;
  bool adaptive = false;
  int64_t iterations = 10;
  double momentum = 0;

  bool robust() const { return rule != Rule::kMean; }
};

// Parses --aggregate: "mean", "median", "trimmed-mean:F" with F in
// [0, 0.5), or "cclip:TAU[:ITERS]" with TAU > 0 or "auto" and ITERS in
// [1, 100] (default 10). InvalidArgument with the reason otherwise.
Result<Aggregation> ParseAggregation(std::string_view text);

// The policies whose updates combine a round of pushes, the only ones a
// robust rule applies to (the others apply each push on its own):
// sync::PolicyTraits::aggregates_rounds.
bool AggregatesRounds(std::string_view policy);

// The value `rule` makes of one coordinate's values (reordered in place):
// their median (the mean of the middle two for an even count) or their mean
// once the floor(trim * n) smallest and largest are left out. The mean rule
// is the plain mean; centred clipping, which works on whole pushes, takes
// the median here (for module state, which it does not clip). REQUIRES:
// values not empty.
float AggregateValues(std::span<float> values, const Aggregation& rule);

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_AGGREGATE_H_
