// The gradients of the simulated workers' lazily computed steps (sync,
// chunked and token modes): each is known once its push leaves the worker
// (the model the step ran on and the samples it took) and needed when the
// server stages it. On one thread each is computed when it is needed, so a
// push that is dropped costs no math. On more, the first one needed also
// computes the next few expected, in the order their pushes left, on all the
// threads at once: pushes from many workers are in flight together, and the
// server stages them one after another. Every gradient is computed by the
// same code on buffers of its own, so the results do not depend on the
// number of threads. Softmax regression on dense rows takes its rows in
// place where the CPU has AVX2 (model/softmax_rows.h).
#ifndef DMLPS_SIM_GRADIENTS_H_
#define DMLPS_SIM_GRADIENTS_H_

#include <Eigen/Core>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <vector>

#include "dmlps/base/thread_pool.h"
#include "dmlps/data/dataset.h"
#include "dmlps/model/model.h"
#include "model/softmax_rows.h"

namespace dmlps::sim {

class PushGradients {
 public:
  // Gradients of `spec` on rows of `train`, on `threads` threads (the
  // caller's included); all zeros without `math`. REQUIRES: train conforms
  // to spec and outlives this.
  PushGradients(const model::ModelSpec& spec, const data::Dataset& train, int64_t threads,
                bool math = true);

  // Worker `w`'s push just left: the mean gradient of `model` over
  // `samples` (rows of train) is what the server will stage. Replaces
  // whatever w's earlier push left behind (a dropped push's gradient).
  void Expect(int64_t w, std::shared_ptr<const std::vector<float>> model,
              std::span<const int64_t> samples);
  // The samples of w's last expected push. REQUIRES: Expect(w, ...) came.
  std::span<const int64_t> SamplesOf(int64_t w) const;
  // The gradient of w's last expected push, computed now if it is not yet.
  // Valid until the next call of Take. REQUIRES: Expect(w, ...) came and
  // no Take(w) since.
  std::span<const float> Take(int64_t w);

 private:
  struct Task {
    std::shared_ptr<const std::vector<float>> model;  // null: nothing expected
    std::vector<int64_t> samples;
    std::vector<float> grad;  // empty until computed
    uint64_t ticket = 0;      // its entry in pending_; 0: none waits
  };
  // A worker whose expected gradient waits, and the task's ticket then: an
  // entry whose ticket the task no longer holds is stale.
  struct Entry {
    int64_t worker = 0;
    uint64_t ticket = 0;
  };
  // One thread's model scratch and batch.
  struct Scratch {
    explicit Scratch(const model::ModelSpec& spec) : model(spec) {}
    model::Model model;
    Eigen::MatrixXf x;
    std::vector<int32_t> y;
    model::SoftmaxRowsScratch rows;
    // The model whose weights rows holds; kept alive so that it cannot be
    // mistaken for a new one at the same address.
    std::shared_ptr<const std::vector<float>> rows_model;
  };

  // Computes the tasks of workers `ws` on the threads, each into a buffer of its own.
  void ComputeAll(const std::vector<int64_t>& ws);
  std::vector<float> Buffer();
  void Release(std::vector<float>& buffer);

  const model::ModelSpec spec_;
  const data::Dataset& train_;
  const int64_t num_params_;
  const bool math_;
  // Softmax regression on dense rows: computed in place, with no gather.
  const bool rows_kernel_;
  std::vector<Task> tasks_;    // by worker
  std::deque<Entry> pending_;  // expected gradients waiting, oldest first
  uint64_t next_ticket_ = 1;
  std::vector<Scratch> scratch_;  // one per thread
  std::vector<std::vector<float>> spare_;
  std::vector<float> taken_;  // what Take returned last
  ThreadPool pool_;
};

}  // namespace dmlps::sim

#endif  // DMLPS_SIM_GRADIENTS_H_
