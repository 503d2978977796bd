// Centred clipping with worker momentum (Karimireddy, He and Jaggi 2021,
// "Learning from History for Byzantine Robust Optimization"; see
// docs/algorithms-robustness.md, "Robust aggregation"): each worker's pushes are
// summed over time into its momentum, and the round's update is a centre
// that starts where the last round's ended and moves towards every
// momentum by at most the clipping radius over the number of pushes. A
// minority of workers, however far out and however they couple their
// pushes across rounds, moves it a bounded distance a round.
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
      : radius_(rule.radius), momentum_(rule.momentum), iterations_(rule.iterations) {}

  // One round: `values[k]` is the push of worker `workers[k]` (distinct
  // ids), every one as long, NaN where the push left a value out. First
  // each of these workers' momentum takes its push, m = beta m + g, the
  // heavy-ball momentum of SGD (the worker's first push: m = g; a value
  // left out leaves m as it was there). The paper's m = beta m + (1 - beta)
  // g is this rule with the radius times 1 - beta and the learning rate
  // over it. Then the centre v, from the last round's (in the first round:
  // the coordinate-wise median of the momenta), takes ITERS steps
  //   v += (1 / k) sum_k (m_k - v) min(1, radius / ||m_k - v||)
  // over the k pushes of the round. Returns v, the round's update; it
  // stays valid until the next call. Workers not in the round keep their
  // momentum for their next push. REQUIRES: workers and values as long,
  // not empty.
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
  // One clipping step of the centre towards `momenta`.
  void Step(std::span<std::vector<float>* const> momenta);

  const double radius_;
  const double momentum_;
  const int64_t iterations_;
  std::map<int64_t, std::vector<float>> momenta_;  // per worker
  std::vector<float> center_;
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_CENTERED_CLIP_H_
