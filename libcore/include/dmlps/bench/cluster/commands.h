// The command lines and environment of the processes of one cluster that
// dmlps-bench run starts: the server (shard 0), the other shards and the
// workers, as a user would start them.
#ifndef DMLPS_BENCH_CLUSTER_COMMANDS_H_
#define DMLPS_BENCH_CLUSTER_COMMANDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "dmlps/bench/cluster/cluster.h"
#include "dmlps/bench/experiment.h"
#include "dmlps/sync/policy.h"

namespace dmlps::bench {

// The rule --optimizer names in a server's extra flags: "sgd" when none does.
std::string ServerOptimizerRule(const std::vector<std::string>& server_args);

// The command lines (program first) of the server and of each worker for one
// run of `policy` (PolicyFor's), with `endpoint_file` and `report_file` as
// the server's --endpoint-file and --report, and `codecs` as its
// --push-codec and --pull-codec (each left out when none). Workers get
// "ENDPOINT" as their --server, to be replaced by the bound address.
std::vector<std::string> ServerCommand(const Experiment& experiment,
                                       const sync::PolicyConfig& policy,
                                       const ClusterOptions& options,
                                       const std::string& endpoint_file,
                                       const std::string& report_file, const Codecs& codecs = {});
std::vector<std::string> WorkerCommand(const Experiment& experiment, int64_t rank,
                                       const ClusterOptions& options, const std::string& endpoint);

// The command line of server shard `k` (1 to options.shards - 1), joining
// shard 0 at `endpoint`.
std::vector<std::string> ShardCommand(const ClusterOptions& options, int64_t k,
                                      const std::string& endpoint);

// The straggler flags dmlps-worker gets for worker `rank` (--slowdown K
// --delay-ms D ... and any schedules), as one argument each.
std::vector<std::string> StragglerFlags(const Experiment& experiment, int64_t rank);

// The variables ("NAME=VALUE") a worker command gets on top of this
// process's environment, so that it can join as dmlps-worker would:
// DMLPS_SERVER, DMLPS_RANK, DMLPS_WORKERS, DMLPS_MODEL, DMLPS_DATA,
// DMLPS_THREADS, DMLPS_SEED, DMLPS_BIN, DMLPS_TRACE (empty: no trace), the
// straggler profile as dmlps-worker flags (DMLPS_WORKER_FLAGS), as dmlps.Worker
// keywords in JSON (DMLPS_WORKER_OPTIONS) and one by one (DMLPS_SLOWDOWN,
// DMLPS_DELAY_MS, DMLPS_DELAY_PROB, DMLPS_ROUND_ROBIN_MS,
// DMLPS_BANDWIDTH_MBPS, DMLPS_SLOWDOWN_SCHEDULE, DMLPS_BANDWIDTH_SCHEDULE;
// a schedule is empty when there is none).
std::vector<std::string> WorkerEnvironment(const Experiment& experiment, int64_t rank,
                                           const ClusterOptions& options,
                                           const std::string& endpoint);

}  // namespace dmlps::bench

#endif  // DMLPS_BENCH_CLUSTER_COMMANDS_H_
