#include "dmlps/sync/fedavg.h"

namespace dmlps::sync {

Status CheckFedAvg(const PolicyConfig& config) {
  if (config.local_steps < 1) {
    return Status::InvalidArgument(config.name + " needs at least 1 local step");
  }
  if (config.outer_lr != 1 || config.outer_momentum != 0) {
    return Status::InvalidArgument(
        config.name +
        " averages the workers' models: its outer learning rate is 1 and it has no outer "
        "momentum (localsgd takes others)");
  }
  return Status::Ok();
}

}  // namespace dmlps::sync
