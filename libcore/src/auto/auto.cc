// auto's candidates, its bar, and the factory that makes it beside the
// policies of sync/registry.h.
#include "dmlps/auto/auto.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "auto/readings.h"
#include "dmlps/bench/experiment.h"
#include "dmlps/sync/registry.h"

namespace dmlps::autopolicy {

std::vector<std::string> AutoCandidates(int64_t num_workers, const advise::EfficiencyTable& table) {
  if (num_workers < 2) return {"bsp", "ssp:3", "lbbsp"};
  // Two workers: backup:1 would keep one push a round of two.
  if (num_workers < 3) return {"bsp", "backup:1", "ssp:3", "lbbsp"};
  // backup:1 first, so that auto starts under it: until its first decision
  // it runs uninformed, and a backup worker's round waits for no one slow
  // worker (docs/auto.md, "The start").
  std::vector<std::string> candidates = {"backup:1", "bsp"};
  // More backup workers only where the table prices them with rows of
  // their own, learned on as many workers: priced by backup:1's row they
  // would look as efficient for fewer gradients a round (docs/auto.md,
  // "Candidates").
  if (table.workers == num_workers) {
    for (int64_t b = 2; b < num_workers; ++b) {
      const std::string entry = fmt::format("backup:{}", b);
      const bool own =
          std::any_of(table.rows.begin(), table.rows.end(),
                      [&](const advise::Efficiency& row) { return row.policy == entry; });
      if (own) candidates.push_back(entry);
    }
  }
  candidates.insert(candidates.end(), {"ssp:3", "lbbsp"});
  // The table, learned on as many workers, may name where auto goes on its
  // job: it starts there instead.
  const auto start = std::find(candidates.begin(), candidates.end(), table.auto_start);
  if (table.workers == num_workers && start != candidates.end()) {
    std::rotate(candidates.begin(), start, start + 1);
  }
  return candidates;
}

Status CheckAutoCandidate(std::string_view entry, int64_t num_workers, int64_t batch) {
  PolicyConfig config;
  config.name = std::string(kAutoPolicy);
  config.job.workers = num_workers;
  config.job.batch = batch;
  return sync::CheckSwitchCandidate(entry, config);
}

double AutoSwitchBar(std::string_view running, std::string_view to, int returns) {
  const double bar =
      GivesUpTolerance(running, to) ? AutoDecider::kIntoBsp : 1 / (1 - AutoDecider::kMinGain);
  return bar * std::pow(AutoDecider::kReturnBar, returns);
}

Result<std::unique_ptr<Policy>> MakeAuto(const PolicyConfig& config,
                                         const std::vector<advise::EfficiencyTable>& tables,
                                         std::shared_ptr<Env> env) {
  DMLPS_RETURN_IF_ERROR(sync::CheckPolicy(config));
  if (tables.empty()) return Status::InvalidArgument("auto needs an efficiency table");
  AutoDecider::Options options;
  options.table =
      advise::EfficiencyFor(tables, config.job.model, config.job.batch, config.job.workers);
  options.candidates = config.candidates.empty() ? AutoCandidates(config.job.workers, options.table)
                                                 : config.candidates;
  options.batch = config.job.batch;
  options.every = config.decide_every;
  options.target = config.job.target_accuracy;
  options.max_iterations = config.job.max_iterations;
  options.env = std::move(env);
  // In the push a decision holds up the rounds, and 40 simulated
  // iterations are what it can afford; in the background none waits, and
  // the budget bounds what the predictions take from the workers
  // (docs/auto.md, "Where it predicts").
  options.background = config.decide_in_background;
  if (options.background) {
    options.delays_sim_iterations = advise::kSimIterations;
    options.predict_share = AutoDecider::kPredictShare;
  }
  const int64_t n = config.job.workers;
  sync::InnerPolicyMaker make = [config](std::string_view name, int64_t workers) {
    bench::Experiment experiment;
    experiment.job = config.job;
    experiment.job.workers = workers;
    Result<PolicyConfig> inner = bench::PolicyFor(name, experiment);
    if (!inner.ok()) return Result<std::unique_ptr<Policy>>(inner.status());
    return sync::MakePolicy(*inner);
  };
  return std::unique_ptr<Policy>(std::make_unique<sync::SwitchingPolicy>(
      n, std::make_unique<AutoDecider>(n, std::move(options)), std::move(make), config.job.batch));
}

Result<std::unique_ptr<Policy>> MakePolicy(const PolicyConfig& config) {
  // auto's row in sync/registry.h leaves its making to this room.
  if (config.name != kAutoPolicy) return sync::MakePolicy(config);
  DMLPS_RETURN_IF_ERROR(sync::CheckPolicy(config));
  DMLPS_ASSIGN_OR_RETURN(std::vector<advise::EfficiencyTable> tables, advise::LoadEfficiencies());
  return MakeAuto(config, tables);
}

}  // namespace dmlps::autopolicy
