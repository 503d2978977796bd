// The simulator on timing alone: the same run as Simulate, with a one-feature
// stand-in model and data in place of the real ones, for predictions that
// need only time (dmlps::advise) and must be quick.
#include <algorithm>

#include "dmlps/sim/sim.h"

namespace dmlps::sim {
namespace {

// Two classes of one feature: every sample the same, a label each in turn.
data::Dataset StandInData(int64_t rows) {
  data::Dataset data;
  data.dim = 1;
  data.classes = 2;
  for (int64_t i = 0; i < rows; ++i) {
    data.labels.push_back(static_cast<int32_t>(i % 2));
    data.dense.push_back(1.f);
  }
  return data;
}

}  // namespace

Result<SimReport> SimulateTiming(SimConfig config, int64_t num_params) {
  if (num_params < 1) return Status::InvalidArgument("a timing run needs a model of 1+ parameters");
  DMLPS_ASSIGN_OR_RETURN(config.model, model::ParseModelSpec("softmax", 1, 2));
  const int64_t stand_in = config.model.NumParams();
  // Passes over the parameters cost as over the real model's; messages weigh
  // as its (payload_params).
  config.cost.param_s *= static_cast<double>(num_params) / static_cast<double>(stand_in);
  config.payload_params = num_params;
  config.job.target_accuracy = 0;
  config.math = false;
  // One sample for every worker's shard; a step's samples wrap around it.
  const data::Dataset train = StandInData(std::max<int64_t>(config.job.workers, 1));
  const data::Dataset test = StandInData(2);
  return Simulate(config, train, test);
}

}  // namespace dmlps::sim
