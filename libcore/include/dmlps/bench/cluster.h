// Runs one real cluster on this host: a dmlps-server and its dmlps-workers as
// separate processes (the binaries a user runs), talking over loopback.
#ifndef DMLPS_BENCH_CLUSTER_H_
#define DMLPS_BENCH_CLUSTER_H_

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
  // How long the processes may take to start and load their data, and to
  // exit once the server has stopped, beyond the experiment's --max-seconds.
  std::chrono::seconds slack{120};
};

// What a running cluster shows, for a progress line.
struct Progress {
  double elapsed_s = 0;  // wall time since the processes started
  double seconds = 0;    // training time of the newest evaluation
  int64_t iteration = 0;
  double accuracy = -1;  // -1: no evaluation yet
};

// The command lines (program first) of the server and of each worker for one
// run of `policy_entry`, with `endpoint_file` and `report_file` as the
// server's --endpoint-file and --report. Workers get "ENDPOINT" as their
// --server, to be replaced by the bound address.
std::vector<std::string> ServerCommand(const Experiment& experiment, std::string_view policy_entry,
                                       const ClusterOptions& options,
                                       const std::string& endpoint_file,
                                       const std::string& report_file);
std::vector<std::string> WorkerCommand(const Experiment& experiment, int64_t rank,
                                       const ClusterOptions& options, const std::string& endpoint);

// Parses a `dmlps-server --report` file into a RunResult (policy and repeat
// left for the caller).
Result<RunResult> ReadServerReport(const std::string& path);

// Runs the cluster to its end and returns what the server reported. A run
// that misses the target is a result (reached = false); a run that breaks
// (a process fails to start or exits with an error, a timeout, no report)
// is a result with `failure` set and the logs named. Cancelled (with every
// child killed) when *signal becomes nonzero. `progress` is called about
// every 200 ms while the run lasts.
RunResult RunCluster(const Experiment& experiment, std::string_view policy_entry, int64_t repeat,
                     const ClusterOptions& options, const std::atomic<int>* signal,
                     const std::function<void(const Progress&)>& progress);

}  // namespace dmlps::bench

#endif  // DMLPS_BENCH_CLUSTER_H_
