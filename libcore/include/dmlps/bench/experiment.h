// An experiment as dmlps-bench runs or simulates it: one training job, a
// straggler profile per worker, and the policies to compare on it.
#ifndef DMLPS_BENCH_EXPERIMENT_H_
#define DMLPS_BENCH_EXPERIMENT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dmlps/base/job.h"
#include "dmlps/base/status.h"
#include "dmlps/compress/compress.h"
#include "dmlps/sync/policy.h"
#include "dmlps/worker/straggler.h"

namespace dmlps::bench {

// The codecs a run sends its pushes and its pulls in, as dmlps-server's
// --push-codec and --pull-codec take them (docs/compression.md).
struct Codecs {
  compress::Codec push;
  compress::Codec pull;

  bool operator==(const Codecs&) const = default;
};

// "PUSH/PULL", e.g. "int8/none": how a table names a pair.
std::string CodecsName(const Codecs& codecs);
// The names of experiment.codecs, in order: the codec axis of its table.
std::vector<std::string> CodecsNames(const std::vector<Codecs>& codecs);
// Parses an entry of --codecs: "PUSH/PULL", or "PUSH" alone, pulling in
// `pull`. InvalidArgument naming the part that is no codec otherwise.
Result<Codecs> ParseCodecs(std::string_view entry, const compress::Codec& pull);

struct Experiment {
  // The job every policy runs. Samples per worker step: 256 makes a step
  // long enough (about 3 ms) that computing, not messaging, dominates, as in
  // the papers' settings. A run that has not reached the target by
  // max_seconds has missed it.
  JobSpec job{.workers = 4, .batch = 256, .lr = 0.1, .target_accuracy = 0.85, .max_seconds = 300};
  // As the user listed them: bsp, asp, ssp:S, backup:B, wbsp, wbsp-overlap,
  // abps, lbbsp, lbbsp:PREDICTOR (last, ema, arima, narx), lbbsp-gpu, token,
  // localsgd, localsgd:H (H local steps per push), async-localsgd[:H],
  // async-localsgd-dylu[:H] (with Dynamic Local Updates), dssp[:LOW:HIGH],
  // sync-switch[:FRACTION] (BSP, then ASP) and sync-switch:online.
  std::vector<std::string> policies = {"bsp", "ssp:3", "wbsp", "abps", "lbbsp"};
  // One per worker (rank order), as the flags give them.
  std::vector<worker::StragglerSpec> stragglers;
  // asp, ssp, dssp, async-localsgd: pushes per momentum step
  // (sync::PolicyConfig::momentum_every; 0: each policy's default).
  int64_t momentum_every = 0;
  int64_t repeat = 1;
  // The codecs to compare, at least one: each policy runs under each pair in
  // turn. Dense both ways unless told.
  std::vector<Codecs> codecs = {Codecs{}};
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

// Parses one entry "RANK=VALUE" of a schedule given for some workers
// (RANK=I:V,...[;RANK=...]) into the rank, below `workers`, and VALUE, the
// schedule for that worker.
Result<std::pair<int64_t, std::string>> ParseRankEntry(std::string_view entry, int64_t workers);

// The experiment in one line, for the title of its table: "4 workers,
// mlp:128, fashion-mnist, batch 256, lr 0.1, slowdown 1,1,1,4, target 0.85,
// 1 run each"; a run of more than three equal factors is shortened to one,
// "1 (x4095),4".
std::string DescribeExperiment(const Experiment& experiment);

// Every problem with `experiment`, one message each naming its flag.
std::vector<std::string> ValidateExperiment(const Experiment& experiment);

}  // namespace dmlps::bench

#endif  // DMLPS_BENCH_EXPERIMENT_H_
