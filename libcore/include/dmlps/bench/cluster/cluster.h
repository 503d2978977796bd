// Runs one real cluster on this host: a dmlps-server and its dmlps-workers as
// separate processes (the binaries a user runs), talking over loopback.
#ifndef DMLPS_BENCH_CLUSTER_CLUSTER_H_
#define DMLPS_BENCH_CLUSTER_CLUSTER_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/bench/experiment.h"
#include "dmlps/bench/report.h"

namespace dmlps::bench {

struct ClusterOptions {
  std::string bin_dir;    // holds dmlps-server and dmlps-worker
  std::string run_dir;    // this run's logs, endpoint file and report; created if missing
  std::string trace_dir;  // this run's traces (server.trace, worker-R.trace); empty: none
  int64_t threads = 1;    // each worker's --threads
  // Server shards: the server runs as shard 0 of S and, once it listens,
  // shards 1 to S-1 join it on loopback (dmlps-server --shard K/S
  // --coordinator), their logs shard-K.log. 1: one unsharded server.
  int64_t shards = 1;
  // How long the processes may take to start and load their data, and to
  // exit once the server has stopped, beyond the experiment's --max-seconds.
  std::chrono::seconds slack{120};
  // Non-empty: each worker is `/bin/sh -c worker_command` with
  // WorkerEnvironment's variables, instead of dmlps-worker, so a user's own
  // worker (e.g. PyTorch through the dmlps module) takes part.
  std::string worker_command;
  // Non-empty: the server is started with --evaluator and, once per run,
  // `/bin/sh -c evaluator_command` with DMLPS_SERVER set scores its
  // snapshots (needed by a target with --model external).
  std::string evaluator_command;
  // Start each server with --deterministic: a round's gradients summed in
  // rank order, so that a policy's arithmetic is the same whatever order
  // the pushes arrive in, and runs differ by the policy's choices alone.
  bool deterministic = false;
  // More flags for every server (shard 0), after the bench's own: a job's
  // optimizer recipe (--optimizer adamw --weight-decay ...), say.
  std::vector<std::string> server_args;
  // The servers' --target-loss: a run's time is its time to a mean test
  // loss at most this (with the experiment's target too, when that is set:
  // both). 0: none.
  double target_loss = 0;
};

// Parses a `dmlps-server --report` file into a RunResult (policy and repeat
// left for the caller).
Result<RunResult> ReadServerReport(const std::string& path);

// Runs the cluster to its end and returns what the server reported. A run
// that misses the target is a result (reached = false); a run that breaks
// (a process fails to start or exits with an error, a timeout, no report)
// is a result with `failure` set and the logs named. Cancelled (with every
// child killed) when *signal becomes nonzero. `progress` is called about
// every 200 ms while the run lasts. The server sends and takes its messages
// in `codecs`.
RunResult RunCluster(const Experiment& experiment, std::string_view policy_entry,
                     const Codecs& codecs, int64_t repeat, const ClusterOptions& options,
                     const std::atomic<int>* signal,
                     const std::function<void(const Progress&)>& progress);

}  // namespace dmlps::bench

#endif  // DMLPS_BENCH_CLUSTER_CLUSTER_H_
