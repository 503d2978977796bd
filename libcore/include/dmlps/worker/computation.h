// What a worker computes, as an interface: any model whose parameters are
// one flat float vector can be trained by dmlps workers by implementing
// Computation. The worker owns everything else: joining the server, the
// order samples are visited in (a shuffled epoch per pass, seeded by the
// server), the policy's steps, emulated straggling, tracing and pushes. The
// built-in models implement it over a data::Dataset shard (DatasetComputation).
#ifndef DMLPS_WORKER_COMPUTATION_H_
#define DMLPS_WORKER_COMPUTATION_H_

#include <Eigen/Core>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/data/dataset.h"
#include "dmlps/model/backend.h"

namespace dmlps::worker {

// What the server told the worker when it joined: enough for a computation
// to pick its share of the data and check that its layout fits.
struct JobInfo {
  int64_t rank = 0;
  int64_t num_workers = 0;
  std::string model;  // the server's model name, e.g. "mlp:128" or "external"
  std::string policy;
  int64_t batch = 0;       // samples per step the server asks for at first
  int64_t input_dim = 0;   // features per sample of the server's model
  int64_t classes = 0;     // its class count
  int64_t num_params = 0;  // the length of the flat parameter vector
  // Of it, the floats of module state that end it (an external model's
  // buffers, model::TensorSpec::state): Compute reads the server's state
  // there in params and writes the module's own, as the step left it, there
  // in grad. 0: none.
  int64_t num_state = 0;
  int64_t shard_index = 0;
  int64_t shard_count = 1;  // this worker's share of the data: shard_index of shard_count
};

// JobInfo's one list of its fields: calls visit(name, field...) with each
// field's name and that field of each of `jobs`, in the order above. A job
// may be any struct with fields of these names, as the server's
// proto::Welcome: how a worker fills a JobInfo from the Welcome, and how
// the Python binding shows one (a dict of these names).
template <typename Visit, typename... Jobs>
void VisitJobFields(Visit&& visit, Jobs&... jobs) {
  visit("rank", jobs.rank...);
  visit("num_workers", jobs.num_workers...);
  visit("model", jobs.model...);
  visit("policy", jobs.policy...);
  visit("batch", jobs.batch...);
  visit("input_dim", jobs.input_dim...);
  visit("classes", jobs.classes...);
  visit("num_params", jobs.num_params...);
  visit("num_state", jobs.num_state...);
  visit("shard_index", jobs.shard_index...);
  visit("shard_count", jobs.shard_count...);
}

// One model's gradients over the training samples a worker holds. A worker
// calls it from one thread at a time (not always the same thread: WBSP's
// overlapped steps compute on a thread of their own).
class Computation {
 public:
  virtual ~Computation() = default;

  // Called once the server has welcomed the worker, and again when it
  // rejoins a server; before num_params() and num_samples() are read. An
  // error ends the worker (it leaves the server) with that error.
  virtual Status Join(const JobInfo& job) { return Status::Ok(); }
  // The length of the flat parameter vector: must equal the server's.
  virtual int64_t num_params() const = 0;
  // How many training samples this computation holds; sample ids passed to
  // Compute are in [0, num_samples()). Must be at least 1.
  virtual int64_t num_samples() const = 0;
  // The mean loss over the samples `sample_ids` at `params`, with its
  // gradient (the mean over those samples) written to `grad`. params and
  // grad have num_params() floats; sample_ids is not empty. An error ends the
  // worker, which leaves the server, with that error.
  virtual Result<double> Compute(std::span<const float> params, std::span<const int64_t> sample_ids,
                                 std::span<float> grad) = 0;

  // Whether the computation takes the local steps of the local modes (wbsp,
  // localsgd, async-localsgd) with an optimizer of its own, such as
  // torch.optim.AdamW for DiLoCo's inner steps, rather than the worker's
  // SGD with the Welcome's learning rate and momentum.
  virtual bool TakesLocalSteps() const { return false; }
  // One local step, right after Compute at `params` wrote `grad`: moves
  // `params`, the worker's local copy, as the computation's optimizer
  // steps it, and sets its module state (the last JobInfo::num_state
  // floats) to the computation's own. An error ends the worker.
  // REQUIRES: TakesLocalSteps().
  virtual Status LocalStep(std::span<float> params, std::span<const float> grad) {
    return Status::Ok();
  }

  // Page-locks a host buffer that gradients are copied into, for a GPU
  // computation (see model::Backend::PinHostBuffer); others do nothing.
  // Undone with UnpinHostBuffer before the buffer is freed.
  virtual Status PinHostBuffer(std::span<float> buffer) { return Status::Ok(); }
  virtual void UnpinHostBuffer(std::span<float> buffer) {}
};

// A built-in model (model::Backend, on the CPU or a GPU) over a dataset
// shard: sample id i is the shard's row i.
class DatasetComputation : public Computation {
 public:
  // REQUIRES: backend not null; shard fits the backend's model (see
  // data::Dataset::ConformTo).
  DatasetComputation(data::Dataset shard, std::unique_ptr<model::Backend> backend);

  int64_t num_params() const override { return backend_->num_params(); }
  int64_t num_samples() const override { return shard_.rows(); }
  Result<double> Compute(std::span<const float> params, std::span<const int64_t> sample_ids,
                         std::span<float> grad) override;
  Status PinHostBuffer(std::span<float> buffer) override { return backend_->PinHostBuffer(buffer); }
  void UnpinHostBuffer(std::span<float> buffer) override { backend_->UnpinHostBuffer(buffer); }

 private:
  data::Dataset shard_;
  std::unique_ptr<model::Backend> backend_;
  Eigen::MatrixXf x_;  // the gathered batch, reused across calls
  std::vector<int32_t> y_;
};

}  // namespace dmlps::worker

#endif  // DMLPS_WORKER_COMPUTATION_H_
