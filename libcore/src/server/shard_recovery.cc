#include "server/shard_recovery.h"

#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <streambuf>
#include <string>
#include <vector>

#include "server/parameter_server.h"

namespace dmlps::server {

namespace {

// Passes everything on to `out` but its first line: the TSV header, which a
// run after a rollback writes again.
class SkipFirstLine : public std::streambuf {
 public:
  explicit SkipFirstLine(std::ostream& out) : out_(out) {}

 protected:
  int_type overflow(int_type ch) override {
    if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
    const char c = traits_type::to_char_type(ch);
    if (skipping_) {
      if (c == '\n') skipping_ = false;
      return ch;
    }
    out_.put(c);
    return out_ ? ch : traits_type::eof();
  }
  int sync() override {
    out_.flush();
    return out_ ? 0 : -1;
  }

 private:
  std::ostream& out_;
  bool skipping_ = true;
};

}  // namespace

void ParameterServer::CommitCheckpoint() {
  if (!unacked_.has_value() || !shards_->Written(unacked_->version)) return;
  checkpoints_->Submit(std::move(*unacked_));
  unacked_.reset();
}

bool ParameterServer::RollBack() {
  if (config_.checkpoint.empty() || shards_->lost() < 1) return false;
  // The checkpoint being written is the one to go back to: whole on disk first.
  FinishCheckpoints();
  if (report_.checkpoints == 0 && report_.resumed_iteration < 0) {
    spdlog::error("no checkpoint written yet to go back to");
    return false;
  }
  const std::string why =
      shards_->fatal().message() + " at iteration " + std::to_string(driver_->iteration()) +
      "; the job goes back to its last checkpoint, " + config_.checkpoint + ", once server shard " +
      std::to_string(shards_->lost()) + " registers again (restart it with --resume)";
  spdlog::warn("{}", why);
  desk_->RollBack(why);
  rolled_back_ = true;
  return true;
}

Status ParameterServer::RejoinTimedOut() {
  // Workers are admitted only once every shard is back: name the shards first.
  std::vector<std::string> shards;
  for (const int64_t k : shards_->Missing()) shards.push_back(std::to_string(k));
  std::string who;
  if (!shards.empty()) {
    who = fmt::format("server shard{} {} did not join again", shards.size() == 1 ? "" : "s",
                      fmt::join(shards, ", "));
  } else if (desk_->joined() < config_.workers) {
    who = fmt::format("{} of {} workers did not join again", config_.workers - desk_->joined(),
                      config_.workers);
  } else {
    who = "the workers did not load their data";
  }
  const std::string why = fmt::format(
      "the job did not come back within --rejoin-timeout {:g} s of going back to {}: {}",
      std::chrono::duration<double>(config_.rejoin_timeout).count(), config_.resume, who);
  desk_->Stop(why);
  return Status::Unavailable(why);
}

Result<RunReport> RunRecoverableShardZero(const ServerConfig& config, std::ostream& tsv,
                                          const std::atomic<int>* signal) {
  ServerConfig run = config;
  SkipFirstLine headerless(tsv);
  std::ostream later(&headerless);
  for (int64_t rollbacks = 0;; ++rollbacks) {
    std::string address;
    {
      ParameterServer server(run, rollbacks == 0 ? tsv : later, signal);
      if (rollbacks > 0) server.ExpectRejoin();
      Result<RunReport> report = server.Run();
      if (!server.rolled_back()) return report;
      address = server.address();
    }  // its socket closed: the address is free again
    // Workers rejoin shard 0 where they found it.
    run.bind = address;
    run.resume = config.checkpoint;
    spdlog::info("rollback {}: shard 0 starts again from {} on {}", rollbacks + 1, run.resume,
                 run.bind);
  }
}

}  // namespace dmlps::server
