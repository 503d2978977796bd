// Centred clipping with worker momentum (Karimireddy, He and Jaggi 2021,
// "Learning from History for Byzantine Robust Optimization"; see
// docs/algorithms-robustness.md, "Robust aggregation"): each worker's pushes are
// summed over time into its momentum, and the round's update is a centre
// that starts where the last round's ended and moves towards every
// momentum by at most the clipping radius over the number of pushes. A
// minority of workers, however far out and however they couple their
// pushes across rounds, moves it a bounded distance a round. With
// "cclip:auto" each momentum is first replaced by the mean of its nearest
// ones (nearest-neighbour mixing, Allouah et al. 2023, "Fixing by Mixing"),
// and each step's radius is the distance of the farthest of the momenta a
// minority cannot hold: a bad worker far out then pulls by no more than
// the honest ones stand apart, which the mixing has shrunk.
#ifndef DMLPS_SERVER_CENTERED_CLIP_H_
#define DMLPS_SERVER_CENTERED_CLIP_H_

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "server/aggregate.h"

namespace dmlps::server {

class CenteredClip {
 public:
  // The rule's radius, iterations and momentum (Aggregation::kCenteredClip).
  explicit CenteredClip(const Aggregation& rule)
      : radius_(rule.radius),
        momentum_(rule.momentum),
        iterations_(rule.iterations),
        adaptive_(rule.adaptive) {}

  // One round: `values[k]` is the push of worker `workers[k]` (distinct
  // ids), every one as long, NaN where the push left a value out. First
  // each of these workers' momentum takes its push, m = beta m + g, the
  // heavy-ball momentum of SGD (the worker's first push: m = g; a value
  // left out leaves m as it was there). The paper's m = beta m + (1 - beta)
  // g is this rule with the radius times 1 - beta and the learning rate
  // over it. Then the centre v, from the last round's (in the first round:
  // the coordinate-wise median of the momenta), takes ITERS steps
  //   v += (1 / k) sum_k (m_k - v) min(1, radius / ||m_k - v||)
  // over the k pushes of the round. Adaptive: with f = ceil(k / 2) - 1,
  // the most bad workers a minority can be, the steps go towards the
  // mixed momenta instead, each the mean of the k - f momenta nearest to
  // it (itself included), and the radius of a step is the distance from
  // v of the (k - f)-th nearest mixed momentum. Returns v, the round's
  // update; it stays valid until the next call. Workers not in the round
  // keep their momentum for their next push. REQUIRES: workers and values
  // as long, not empty.
  std::span<const float> Round(std::span<const int64_t> workers,
                               std::span<const std::vector<float>> values);

  // The workers with a momentum, and the centre (empty before the first
  // round): for tests.
  size_t workers() const { return momenta_.size(); }
  const std::vector<float>& center() const { return center_; }

 private:
  // Takes `values` into worker `worker`'s momentum; returns it.
  std::vector<float>& TakePush(int64_t worker, const std::vector<float>& values);
  // The coordinate-wise median of `momenta` (values left out, NaN, do not
  // take part; a coordinate none has is 0).
  static std::vector<float> Median(std::span<std::vector<float>* const> momenta);
  // Each of `momenta` replaced by the mean of the `keep` nearest to it
  // (itself included; ties go to the earlier one).
  static std::vector<std::vector<float>> Mix(std::span<std::vector<float>* const> momenta,
                                             size_t keep);
  // The distance from the centre of the `keep`-th nearest of `momenta`.
  double KeptRadius(std::span<std::vector<float>* const> momenta, size_t keep) const;
  // One clipping step of the centre towards `momenta`, each pull clipped
  // to `radius`.
  void Step(std::span<std::vector<float>* const> momenta, double radius);

  const double radius_;
  const double momentum_;
  const int64_t iterations_;
  const bool adaptive_;
  std::map<int64_t, std::vector<float>> momenta_;  // per worker
  std::vector<float> center_;
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_CENTERED_CLIP_H_
