#include "server/shard_recovery.h"

#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <optional>
#include <string>
#include <vector>

#include "server/parameter_server.h"

namespace dmlps::server {

bool Rollback::Begin() {
  if (config_.checkpoint.empty() || shards_.lost() < 1) return false;
  // The checkpoint being written is the one to go back to: whole on disk first.
  report_.checkpoints = checkpoints_.Finish();
  if (report_.checkpoints == 0 && report_.resumed_iteration < 0) {
    spdlog::error("no checkpoint written yet to go back to");
    return false;
  }
  const std::string why =
      shards_.fatal().message() + " at iteration " + std::to_string(driver_.iteration()) +
      "; the job goes back to its last checkpoint, " + config_.checkpoint + ", once server shard " +
      std::to_string(shards_.lost()) + " registers again (restart it with --resume)";
  spdlog::warn("{}", why);
  desk_.RollBack(why);
  begun_ = true;
  return true;
}

Status Rollback::RejoinTimedOut() {
  // Workers are admitted only once every shard is back: name the shards first.
  std::vector<std::string> shards;
  for (const int64_t k : shards_.Missing()) shards.push_back(std::to_string(k));
  std::string who;
  if (!shards.empty()) {
    who = fmt::format("server shard{} {} did not join again", shards.size() == 1 ? "" : "s",
                      fmt::join(shards, ", "));
  } else if (desk_.joined() < config_.job.workers) {
    who = fmt::format("{} of {} workers did not join again", config_.job.workers - desk_.joined(),
                      config_.job.workers);
  } else {
    who = "the workers did not load their data";
  }
  const std::string why = fmt::format(
      "the job did not come back within --rejoin-timeout {:g} s of going back to {}: {}",
      std::chrono::duration<double>(config_.rejoin_timeout).count(), config_.resume, who);
  desk_.Stop(why);
  return Status::Unavailable(why);
}

Result<RunReport> RunRecoverableShardZero(const ServerConfig& config, std::ostream& tsv,
                                          const std::atomic<int>* signal) {
  ServerConfig run = config;
  // Each run after a rollback goes on with the first one's TSV and clock.
  std::optional<RunClock> clock;
  for (int64_t rollbacks = 0;; ++rollbacks) {
    std::string address;
    {
      ParameterServer server(run, tsv, signal, clock);
      if (rollbacks > 0) server.ExpectRejoin();
      Result<RunReport> report = server.Run();
      if (!server.rolled_back()) return report;
      address = server.address();
      clock = server.run_clock();
    }  // its socket closed: the address is free again
    // Workers rejoin shard 0 where they found it.
    run.bind = address;
    run.resume = config.checkpoint;
    spdlog::info("rollback {}: shard 0 starts again from {} on {}", rollbacks + 1, run.resume,
                 run.bind);
  }
}

}  // namespace dmlps::server
