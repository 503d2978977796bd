// A cluster profile (advisor.h) measured from the traces of one run, as
// `dmlps-bench run --trace-dir` writes them (server.trace and
// worker-R.trace in one folder per run), under any policy and with any
// model, built-in or external.
#ifndef DMLPS_ADVISE_TRACE_PROFILE_H_
#define DMLPS_ADVISE_TRACE_PROFILE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dmlps/advise/advisor.h"
#include "dmlps/base/status.h"
#include "dmlps/trace/trace.h"

namespace dmlps::advise {

// What one traced run measured: the cluster, and what the run itself did.
struct MeasuredRun {
  ClusterProfile profile;
  std::string policy;      // the server's (its run/start instant); empty when not traced
  std::string model;       // the job's, from the same instant; empty when not traced
  double seconds = 0;      // the run's length (run/end), 0 when not traced
  int64_t iterations = 0;  // at the end
  double target = 0;       // the run's target accuracy (0: none)
  bool reached = false;
  int64_t target_iteration = 0;  // when reached
  // (iteration, accuracy) of each evaluation the server traced, in order.
  std::vector<std::pair<int64_t, double>> accuracy;
  // The cores of the server's host, as the server's "worker admitted"
  // instants give them, where every worker traced runs there; else 0.
  int64_t host_cores = 0;

  // The first evaluated iteration whose accuracy reached `target`; 0 when
  // none did.
  int64_t IterationsTo(double target) const;
  // seconds / iterations: the measured time per iteration (0: unknown).
  double IterationSeconds() const {
    return iterations > 0 ? seconds / static_cast<double>(iterations) : 0;
  }
};

// Steps at the start of each worker's history left out: they include
// loading and the first connections.
inline constexpr int64_t kWarmupSteps = 2;
// A step whose time per sample is this many times the worker's steady level
// or more was held up by a transient delay.
inline constexpr double kDelayFactor = 2;

// On cores that the workers share, one worker's steps, seconds per sample
// (`measured`), as the host's work per sample at the typical share of a
// core (`per_sample_s`) times the worker's steady slowness (the lower
// median of `slowness`, each step's time over its computing, of the steps
// under kDelayFactor times their lower quartile), and, on a step that slept
// kDelayFactor times that level or more, the seconds it slept beyond it:
// waiting for a core is the host's noise, a pause is time of its own.
std::vector<double> SharedSteps(const std::vector<double>& measured,
                                const std::vector<double>& slowness, double per_sample_s);

// Measures a run from its records, server's and workers' in any order. Per
// worker, from its compute/step and compute/straggle spans by clock: the
// steady level is the median time per sample since the last lasting change
// of speed (predict::FindLastingChanges), the delays are the steps since
// then at kDelayFactor x the level or more, the jitter the robust log-sd of
// the rest; each step counts the time its pushes take to send beyond the
// workers' usual push where three in four around it do (its own link held
// up or capped), and the
// time per step its spans leave unaccounted (scheduling on a busy host,
// handling a model) is added to the level. Pushes (comm/push) give the parameters, the
// server's apply spans its pass over the parameters, and the quickest worker's median wait for its
// model the links' bandwidth (latency stays ClusterProfile's). DataLoss when the records hold no
// worker steps or no pushes; InvalidArgument for several runs.
Result<MeasuredRun> MeasureRun(const std::vector<trace::Record>& records);

// Reads the traces of one run, given as files or as one folder holding
// server.trace and worker-*.trace, and measures it. NotFound or IOError for
// a file that cannot be read, DataLoss for a damaged one or one with
// nothing to measure, InvalidArgument for a folder of several runs (it
// names them).
Result<MeasuredRun> MeasureTraces(const std::vector<std::string>& paths);

}  // namespace dmlps::advise

#endif  // DMLPS_ADVISE_TRACE_PROFILE_H_
