#include "dmlps/cli/flags.h"

#include <spdlog/fmt/fmt.h>

namespace dmlps::cli {

void AddTrainingOptions(cxxopts::Options& options, const std::string& group,
                        const TrainingFlags& defaults) {
  options.add_options(group)
      ("model", "Model: softmax, mlp:H1[,H2...] or cnn[:C1,C2,H]",
       cxxopts::value<std::string>()->default_value(defaults.model), "SPEC")
      ("data", "Dataset: fashion-mnist, fashion-mnist:DIR, idx:DIR or libsvm:FILE (test set FILE.t)",
       cxxopts::value<std::string>()->default_value(defaults.data), "SPEC")
      ("batch", "Samples per worker step (lbbsp: the mean)",
       cxxopts::value<std::string>()->default_value(std::to_string(defaults.batch)), "B")
      ("lr", "Learning rate",
       cxxopts::value<std::string>()->default_value(fmt::format("{}", defaults.lr)), "RATE")
      ("momentum", "Momentum (0 for plain SGD)",
       cxxopts::value<std::string>()->default_value(fmt::format("{}", defaults.momentum)), "MU");
}

TrainingFlags ReadTrainingOptions(FlagReader& flags) {
  TrainingFlags training;
  training.model = flags.String("model");
  training.data = flags.String("data");
  training.batch = flags.Int("batch", 1, 1 << 24);
  training.lr = flags.Real("lr", 0, 1e6);
  training.momentum = flags.Real("momentum", 0, 1);
  return training;
}

}  // namespace dmlps::cli
