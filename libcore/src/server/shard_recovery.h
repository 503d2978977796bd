// Sharded servers that lose a shard: with checkpoints (--checkpoint), the
// job goes back to its last checkpoint instead of ending. Shard 0 tells the
// workers and the other shards to join again and starts over from its own
// checkpoint on the same address; the other shards start over from theirs
// and register again; the lost shard, restarted with --resume, registers
// too, and training goes on from the checkpoint's version once every shard
// is back. See dmlps-server(1), SHARDED SERVERS.
#ifndef DMLPS_SERVER_SHARD_RECOVERY_H_
#define DMLPS_SERVER_SHARD_RECOVERY_H_

#include <atomic>
#include <ostream>

#include "dmlps/base/status.h"
#include "dmlps/server/server.h"
#include "dmlps/sync/driver.h"
#include "server/coordinator.h"
#include "server/run_checkpoints.h"
#include "server/worker_desk.h"

namespace dmlps::server {

// Shard 0's side of a rollback: when a shard is lost, the workers and the
// other shards told to join again, and in the run that goes on from the
// checkpoint, the job given --rejoin-timeout to be whole again.
class Rollback {
 public:
  // For the job of `config` whose shards are `shards`, workers `desk`,
  // checkpoints `checkpoints`, policy `driver` and report `report`; all
  // outlive this.
  Rollback(const ServerConfig& config, ShardCoordinator& shards, WorkerDesk& desk,
           RunCheckpoints& checkpoints, const sync::DriverCore& driver, RunReport& report)
      : config_(config),
        shards_(shards),
        desk_(desk),
        checkpoints_(checkpoints),
        driver_(driver),
        report_(report) {}

  // A shard was lost (ShardCoordinator::fatal): with --checkpoint and one
  // to go back to, tells the workers and the other shards to join again
  // and returns true; the caller runs shard 0 again (RunRecoverableShardZero).
  bool Begin();
  bool begun() const { return begun_; }
  // In the run after a rollback, the job was not whole again within
  // --rejoin-timeout: stops the workers and shards that came back;
  // Unavailable saying who did not.
  Status RejoinTimedOut();

 private:
  const ServerConfig& config_;
  ShardCoordinator& shards_;
  WorkerDesk& desk_;
  RunCheckpoints& checkpoints_;
  const sync::DriverCore& driver_;
  RunReport& report_;
  bool begun_ = false;
};

// Runs shard 0 of a sharded job with --checkpoint: again with --resume of
// that file, on the address bound, each time a shard is lost after a
// checkpoint was written. The evaluations of every run go to `tsv`, under
// one header, timed from the first run's start (as are the report's
// seconds and --max-seconds): a rollback's pause counts in the run's time.
Result<RunReport> RunRecoverableShardZero(const ServerConfig& config, std::ostream& tsv,
                                          const std::atomic<int>* signal);

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_SHARD_RECOVERY_H_
