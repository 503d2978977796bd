// Evaluates model snapshots on the test set on a thread of its own, so that
// evaluation neither stalls training nor is counted in its time: each result
// carries the time its snapshot was taken. (An earlier lower priority starved
// evaluation whenever workers never idle, as under wbsp-overlap on a small
// machine, and runs went on long after the target; a bounded queue keeps the
// lag bounded instead.)
#ifndef DMLPS_SERVER_EVALUATOR_H_
#define DMLPS_SERVER_EVALUATOR_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "dmlps/base/mutex.h"
#include "dmlps/data/dataset.h"
#include "dmlps/model/model.h"

namespace dmlps::server {

struct Snapshot {
  double seconds = 0;  // training time at which this model existed
  int64_t iteration = 0;
  int64_t version = 0;
  int64_t samples = 0;  // samples whose gradients were in the model by then
  std::shared_ptr<const std::vector<float>> params;
};

// How many snapshots of `params` parameters may wait beyond the one under
// evaluation before one that is not a `must` is skipped: as many as
// kQueueBytes hold, at least kMinQueued and at most kMaxQueued. Skipping
// makes the time to a target depend on how fast a policy trains: where an
// evaluation takes longer than the iterations between two snapshots, a
// faster policy has fewer of its snapshots scored and first reads the
// target later than the iteration that reached it, and the efficiency
// tables learned from such runs price it too dear
// (docs/advise-efficiency.md). Waiting snapshots delay when the run learns
// it reached the target (it trains on meanwhile), not the time it reports.
inline constexpr int64_t kQueueBytes = int64_t{64} << 20;
inline constexpr int64_t kMinQueued = 2;
inline constexpr int64_t kMaxQueued = 64;
int64_t SnapshotQueueLimit(int64_t params);

struct Evaluation {
  Snapshot snapshot;
  model::EvalResult result;
  int64_t start_us = 0;     // when evaluating it began, µs since the Unix epoch
  int64_t duration_us = 0;  // how long it took
};

// Where the server's snapshots are evaluated: here (Evaluator, below) or
// by an evaluator process (RemoteEvaluator). Called from the event loop's
// thread only.
class SnapshotEvaluator {
 public:
  virtual ~SnapshotEvaluator() = default;
  // Queues a snapshot; one that is not a `must` may be skipped when
  // evaluation has fallen behind (counted in skipped(), warned of once).
  virtual void SubmitOrSkip(Snapshot snapshot, bool must) = 0;
  virtual int64_t skipped() const = 0;
  // Results finished since the last call, oldest first.
  virtual std::vector<Evaluation> TakeResults() = 0;
  // Waits until every queued snapshot has a result (remote: at most the
  // evaluator's time limit).
  virtual void WaitIdle() = 0;
  // Forgets snapshots not yet started.
  virtual void DropPending() = 0;
};

// No evaluation at all: an external model with no evaluator process. The
// run goes on and logs no accuracy.
class NoEvaluator : public SnapshotEvaluator {
 public:
  void SubmitOrSkip(Snapshot, bool) override {}
  int64_t skipped() const override { return 0; }
  std::vector<Evaluation> TakeResults() override { return {}; }
  void WaitIdle() override {}
  void DropPending() override {}
};

class Evaluator : public SnapshotEvaluator {
 public:
  Evaluator(model::ModelSpec spec, data::Dataset test_set);
  ~Evaluator() override;
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  // Queues a snapshot, evaluated in order. When evaluation has fallen
  // SnapshotQueueLimit behind, a snapshot that is not a `must` is skipped:
  // returns false.
  bool Submit(Snapshot snapshot, bool must) EXCLUDES(mutex_);
  // As Submit, counting a skipped snapshot (skipped()) and warning at the
  // first. Called from one thread only.
  void SubmitOrSkip(Snapshot snapshot, bool must) override EXCLUDES(mutex_);
  int64_t skipped() const override { return skipped_; }
  std::vector<Evaluation> TakeResults() override EXCLUDES(mutex_);
  // Blocks until every queued snapshot has a result.
  void WaitIdle() override EXCLUDES(mutex_);
  void DropPending() override EXCLUDES(mutex_);

 private:
  void Loop() EXCLUDES(mutex_);
  // The next snapshot to evaluate, marked busy; none once stopping.
  std::optional<Snapshot> Next() EXCLUDES(mutex_);
  // Hands over the result of the snapshot Next gave.
  void Done(Evaluation evaluation) EXCLUDES(mutex_);

  model::Model model_;  // only the evaluation thread uses it
  data::Dataset test_set_;
  Mutex mutex_;
  CondVar wake_;  // a snapshot was queued, or the evaluator stops
  CondVar idle_;  // the queue ran dry with nothing under evaluation
  std::deque<Snapshot> queue_ GUARDED_BY(mutex_);
  std::vector<Evaluation> done_ GUARDED_BY(mutex_);
  bool busy_ GUARDED_BY(mutex_) = false;
  bool stopping_ GUARDED_BY(mutex_) = false;
  int64_t skipped_ = 0;  // SubmitOrSkip's caller's alone
  std::thread thread_;
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_EVALUATOR_H_
