#include "dmlps/worker/computation.h"

#include <utility>

namespace dmlps::worker {

DatasetComputation::DatasetComputation(data::Dataset shard, std::unique_ptr<model::Backend> backend)
    : shard_(std::move(shard)), backend_(std::move(backend)) {}

Result<double> DatasetComputation::Compute(std::span<const float> params,
                                           std::span<const int64_t> sample_ids,
                                           std::span<float> grad) {
  shard_.Gather(sample_ids, &x_, &y_);
  return backend_->LossAndGradient(params, x_, y_, grad);
}

}  // namespace dmlps::worker
