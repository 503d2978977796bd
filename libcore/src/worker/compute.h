// A worker's compute: gradients of its Computation on samples in epoch
// order, with the emulated slowness of a straggler, and the buffers and
// resource readings its pushes carry. Nothing here touches the network.
#ifndef DMLPS_WORKER_COMPUTE_H_
#define DMLPS_WORKER_COMPUTE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/trace/trace.h"
#include "dmlps/worker/computation.h"
#include "dmlps/worker/epoch_cursor.h"
#include "dmlps/worker/resource_usage.h"
#include "dmlps/worker/straggler.h"

namespace dmlps::worker {

// Whole microseconds in `d`, as pushes and traces count time.
inline int64_t Micros(std::chrono::steady_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

// What one computed step produced, for its push.
struct StepResult {
  double loss = 0;
  int64_t samples = 0;
  std::chrono::microseconds compute{0};
  std::chrono::microseconds straggle{0};
  // Of `compute`, the time the computing thread was ready to run but
  // waited for a core (0: none, or the kernel does not say).
  std::chrono::microseconds run_wait{0};
};

class StepComputer {
 public:
  // How emulated slowness is waited out: a sleep that keeps the server
  // informed and fails on a signal.
  using Pause = std::function<Status(std::chrono::microseconds)>;
  // Told +1 as a computation begins and -1 as it ends, so that the server
  // hears from the worker while a long one runs (ServerLink::SetBusy).
  using Busy = std::function<void(int)>;

  // Runs `computation` on its samples in the order a cursor seeded with
  // `seed` gives; `computation` and `tracer` (null: none) outlive this.
  // `busy` may be empty. REQUIRES: computation.num_samples() >= 1.
  StepComputer(Computation& computation, uint64_t seed, StragglerProfile straggler,
               trace::TraceWriter* tracer, Pause pause, Busy busy = {});
  // Goes on from where `samples` samples in that order leave off (a worker
  // that takes a lost one's rank: Welcome::samples_done).
  void SkipSamples(int64_t samples) { cursor_.Skip(samples); }

  // Which iteration a computation's emulated slowness follows, and whether
  // it is the first part of the worker's work in that iteration: the later
  // parts (a step's later chunks, an iteration's later tokens) only scale
  // with the slowdown, so that delays come once an iteration.
  struct StraggleAt {
    int64_t iteration = 0;
    bool first_part = true;
  };

  // Computes the mean gradient of the next `samples` samples on params into
  // grad; then sleeps the emulated slowness of `at` (by default: step
  // `step`, its first part).
  Result<StepResult> Compute(int64_t step, int64_t samples, std::span<const float> params,
                             std::span<float> grad, bool first_part = true) {
    return Compute(step, samples, params, grad, StraggleAt{step, first_part});
  }
  Result<StepResult> Compute(int64_t step, int64_t samples, std::span<const float> params,
                             std::span<float> grad, StraggleAt at);
  // Sleeps as long as sending `bytes` in `step` takes under the emulated
  // bandwidth cap; at once without one.
  Status EmulateTransfer(int64_t step, int64_t bytes);

  // The model's size, which every gradient and push has.
  int64_t num_params() const { return computation_.num_params(); }
  // The computation, for buffers it should page-lock.
  Computation* computation() { return &computation_; }

 private:
  Computation& computation_;
  EpochCursor cursor_;
  StragglerProfile straggler_;
  trace::TraceWriter* tracer_;
  Pause pause_;
  Busy busy_;
  std::vector<int64_t> indices_;
};

// The vectors pushes send from. ZeroMQ may still be sending from one, so a
// buffer is reused only once nothing else holds it. They live as long as the
// loop that pushes them, so a GPU computation page-locks each once and copies
// gradients straight into what the push sends.
class PushBuffers {
 public:
  PushBuffers(Computation* computation, size_t size) : computation_(computation), size_(size) {}
  PushBuffers(const PushBuffers&) = delete;
  PushBuffers& operator=(const PushBuffers&) = delete;
  ~PushBuffers();

  // A buffer that nothing but `*held` (the caller's last one) and this pool
  // holds; *held becomes it.
  std::vector<float>& Take(std::shared_ptr<std::vector<float>>* held);

 private:
  Computation* computation_;
  size_t size_;
  std::vector<std::shared_ptr<std::vector<float>>> buffers_;
};

// CPU and memory as /proc tells them, for predictors that take them in. A
// reading costs about 26 µs, a few percent of a small step, so it is taken
// at most every 100 ms and repeated in between.
class UsageMeter {
 public:
  struct Usage {
    double cpu_cores = 0;      // CPU use between the last two readings
    int64_t memory_bytes = 0;  // resident; 0 before the first reading
  };
  // The latest reading, taken now when the last is 100 ms old.
  Usage Read();

 private:
  std::optional<ResourceSample> usage_;         // the latest /proc reading
  std::chrono::steady_clock::time_point read_;  // when it was attempted
  double cpu_cores_ = 0;
};

}  // namespace dmlps::worker

#endif  // DMLPS_WORKER_COMPUTE_H_
