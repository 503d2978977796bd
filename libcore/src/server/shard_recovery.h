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

namespace dmlps::server {

// Runs shard 0 of a sharded job with --checkpoint: again with --resume of
// that file, on the address bound, each time a shard is lost after a
// checkpoint was written. The evaluations of every run go to `tsv`, under
// one header, timed from the first run's start (as are the report's
// seconds and --max-seconds): a rollback's pause counts in the run's time.
Result<RunReport> RunRecoverableShardZero(const ServerConfig& config, std::ostream& tsv,
                                          const std::atomic<int>* signal);

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_SHARD_RECOVERY_H_
