#include "dmlps/cli/flags.h"

#include <spdlog/fmt/fmt.h>

namespace dmlps::cli {

void AddTrainingOptions(cxxopts::Options& options, const std::string& group,
                        const JobSpec& defaults, bool external_model) {
  AddFlags(
      options, group,
      {{"model",
        external_model ? "Model: softmax, mlp:H1[,H2...], cnn[:C1,C2,H], or external (the first "
                         "worker announces its layout and initial values)"
                       : "Model: softmax, mlp:H1[,H2...] or cnn[:C1,C2,H]",
        "SPEC", defaults.model},
       {"data",
        "Dataset: fashion-mnist, fashion-mnist:DIR, idx:DIR or libsvm:FILE (test set "
        "FILE.t)",
        "SPEC", defaults.data},
       {"batch", "Samples per worker step (lbbsp: the mean)", "B", std::to_string(defaults.batch)},
       {"lr", "Learning rate", "RATE", fmt::format("{}", defaults.lr)},
       {"momentum", "Momentum (0 for plain SGD)", "MU", fmt::format("{}", defaults.momentum)}});
}

void ReadTrainingOptions(FlagReader& flags, JobSpec* job) {
  job->model = flags.String("model");
  job->data = flags.String("data");
  job->batch = flags.Int("batch", 1, 1 << 24);
  job->lr = flags.Real("lr", 0, 1e6);
  job->momentum = flags.Real("momentum", 0, 1);
}

}  // namespace dmlps::cli
