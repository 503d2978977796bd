// dmlps-bench run: an experiment on real clusters on this host, one per
// policy and repeat, beside sim::SimulateExperiment, which simulates it.
#ifndef DMLPS_BENCH_CLUSTER_RUN_H_
#define DMLPS_BENCH_CLUSTER_RUN_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dmlps/bench/cluster/cluster.h"
#include "dmlps/bench/experiment.h"
#include "dmlps/bench/report.h"

namespace dmlps::bench {

struct ExperimentOptions {
  ClusterOptions cluster;  // run_dir and trace_dir are set for each run
  std::string out_dir;     // each run's logs, evaluations and report in out_dir/POLICY-REPEAT
  std::string trace_dir;   // empty: no traces; else each run's in trace_dir/POLICY-REPEAT
  // Repeat K runs with the experiment's seed + K - 1, every policy alike:
  // the repeats then sample K initial models and data orders, paired
  // across the policies, rather than one.
  bool seed_per_repeat = false;
  // Each repeat runs the policies in an order of its own (RepeatOrder):
  // in one fixed order each policy always runs after the same one, and
  // whatever a run leaves the host in (ssp:3's long runs, a scheduler's
  // warm state) falls on the same policy every time.
  bool shuffle = false;
  // A status line kept up to date while a run lasts: `show` about every
  // 200 ms with the run's label ("[2/10] bsp run 1/2") and how it goes,
  // `clear` once it has ended. Unset, the start of each run is logged instead.
  std::function<void(const std::string& label, const Progress& progress)> show;
  std::function<void()> clear;
};

// "ssp:3", 2 -> "ssp-3-2": the folder of one run.
std::string RunFolderName(const std::string& policy, int64_t repeat);

// The order repeat `repeat` (from 1) runs `policies` in: as given, or
// with `shuffle` a permutation drawn from `seed` and the repeat (the same
// for the same three, on every host).
std::vector<std::string> RepeatOrder(const std::vector<std::string>& policies, uint64_t seed,
                                     int64_t repeat, bool shuffle);

// How a run ended, in one line for the log: its failure, or its time,
// iterations, accuracy and compute ratios.
std::string DescribeOutcome(const RunResult& run, bool has_target);

// Runs every policy under each of the experiment's codecs `repeat` times on a
// real cluster each (RunCluster), the policies taking turns so that drift on
// the host hits all alike (each repeat in RepeatOrder's order), and logs
// each run's outcome. Stops early, with the runs that ended, once *signal
// becomes nonzero. A failed run is a result with `failure` set.
std::vector<RunResult> RunExperiment(const Experiment& experiment, const ExperimentOptions& options,
                                     const std::atomic<int>* signal);

}  // namespace dmlps::bench

#endif  // DMLPS_BENCH_CLUSTER_RUN_H_
