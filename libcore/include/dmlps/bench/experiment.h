// An experiment as dmlps-bench runs or simulates it: one training job, a
// straggler profile per worker, and the policies to compare on it.
#ifndef DMLPS_BENCH_EXPERIMENT_H_
#define DMLPS_BENCH_EXPERIMENT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/base/status.h"
#include "dmlps/sync/policy.h"
#include "dmlps/worker/straggler.h"

namespace dmlps::bench {

struct Experiment {
  int64_t workers = 4;
  // As the user listed them: bsp, asp, ssp:S, backup:B, wbsp, wbsp-overlap,
  // abps, lbbsp, lbbsp:PREDICTOR (last, ema, arima, narx), lbbsp-gpu, token.
  std::vector<std::string> policies = {"bsp", "ssp:3", "wbsp", "abps", "lbbsp"};
  // One per worker (rank order); ExpandProfiles fills them from the flags.
  std::vector<worker::StragglerSpec> stragglers;
  std::string model = "mlp:128";
  std::string data = "fashion-mnist";
  // Samples per worker step: 256 makes a step long enough (about 3 ms) that
  // computing, not messaging, dominates, as in the papers' settings.
  int64_t batch = 256;
  double lr = 0.1;
  double momentum = 0.9;
  double target = 0.85;        // 0: no target, run to the limits
  int64_t eval_every = 50;     // iterations between evaluations
  int64_t max_iterations = 0;  // 0: no limit
  double max_seconds = 300;    // a run that has not reached the target by then has missed it
  int64_t repeat = 1;
  uint64_t seed = 1;
};

// The server's policy settings for one entry of Experiment::policies, with
// A-BSP's chunks and Fela's tokens a quarter of a worker's batch (the
// servers' defaults keep that ratio: 16 of 64). InvalidArgument for an entry
// that names no policy or has a bad parameter.
Result<sync::PolicyConfig> PolicyFor(std::string_view entry, const Experiment& experiment);

// Parses a comma-separated list of per-worker values: one value for every
// worker, or exactly `workers` values. The InvalidArgument names the bad
// item, not the flag.
Result<std::vector<double>> ParsePerWorker(std::string_view text, int64_t workers);

// Every problem with `experiment`, one message each naming its flag.
std::vector<std::string> ValidateExperiment(const Experiment& experiment);

}  // namespace dmlps::bench

#endif  // DMLPS_BENCH_EXPERIMENT_H_
