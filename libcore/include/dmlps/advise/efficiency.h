// Statistical efficiency: how many iterations each policy needs to reach a
// target accuracy, relative to BSP on the same job. Time per iteration is
// what the simulator predicts; this is the other half of time to target.
// The tables are data (share/dmlps/efficiency.tsv, installed with the
// programs), one per model, batch and number of workers, each with where
// its numbers came from and the command that remakes them
// (docs/advise-efficiency.md).
#ifndef DMLPS_ADVISE_EFFICIENCY_H_
#define DMLPS_ADVISE_EFFICIENCY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dmlps/base/status.h"

namespace dmlps::advise {

// One policy's iterations to the target over BSP's, on an even cluster, on
// one with a steady straggler (policies such as A-BSP take fewer samples
// per iteration there, so need more iterations), and on an even cluster
// whose steps are held up now and then (SSP's workers then run ahead of a
// delayed one only as far as its bound, so that its gradients are staler
// than on an even cluster but less than beside a straggler).
struct Efficiency {
  std::string policy;  // an entry as dmlps-bench names it: "bsp", "ssp:3", "backup:1"
  double even = 1;
  double straggler = 1;
  double delays = 0;  // 0: not learned; a cluster with delays takes the other columns' mix
};

struct EfficiencyTable {
  std::vector<Efficiency> rows;
  std::string model = "mlp:128";  // the model it was learned on (model::ModelSpec::Name())
  int64_t batch = 256;            // ... and the per-worker batch
  int64_t workers = 4;            // ... and the number of workers
  std::string source;             // where its numbers came from
  std::string command;            // the command that prints its rows
  // How much slower than the others the straggler of the straggler column was.
  double straggler_ratio = 4;
  // Where auto starts on this job, on as many workers, when the runs that
  // learned the table showed where it goes; empty: the first default.
  std::string auto_start;

  // The row of `policy`: the entry itself ("ssp:3"), else the first row of
  // the same policy with another parameter or none ("ssp:7" and "ssp" take
  // ssp:3's); nothing when the policy is not in the table.
  std::optional<Efficiency> Find(std::string_view policy) const;
};

// A row's efficiency on a cluster whose slowest worker's steady step takes
// `ratio` times the fastest's: the even column at 1, the straggler column
// at the table's straggler_ratio and beyond, geometric in between (a mild
// straggler gets a mild share of the straggler column's effect).
double EfficiencyAt(const Efficiency& row, double ratio, double straggler_ratio);

// A row's efficiency on a cluster as EfficiencyAt's, whose most delayed
// worker's transient delays also add `delay_cost` times the fastest
// worker's step to its steps on average: the delays column in full from
// one step on (the column was learned with delays of many steps), none
// without delays, geometric in log(1 + delay_cost) in between; a row with
// no delays column takes EfficiencyAt's.
double EfficiencyUnder(const Efficiency& row, double ratio, double delay_cost,
                       double straggler_ratio);

// Parses the tables file's text (format 1, described at the top of
// share/dmlps/efficiency.tsv); DataLoss naming `origin` and the line for
// anything it cannot read, or for no table at all.
Result<std::vector<EfficiencyTable>> ParseEfficiencies(std::string_view text,
                                                       std::string_view origin);
// Where the tables are read from, in order: $DMLPS_EFFICIENCY when set
// (alone: a file named there must be there), else share/dmlps/efficiency.tsv
// beside the installed programs, else the one of the source tree they
// were built from (a build not installed, and its tests).
std::vector<std::string> EfficiencyFiles();
// The tables of the first of EfficiencyFiles that exists; NotFound naming
// every place looked in when none does, DataLoss for one it cannot read.
Result<std::vector<EfficiencyTable>> LoadEfficiencies();

// Of `tables` (not empty), the one for a job of `model` ("mlp:64",
// "softmax") at `batch` samples per worker on `workers` workers: of the
// tables learned on a model of its kind (the name before any ':', so
// "mlp:64" takes mlp:128's), the one learned at the batch nearest in ratio
// (0: the largest), and of those the one learned at the number of workers
// nearest in ratio (0: the first); a model with none ("external", empty)
// takes the first table, the default job's.
EfficiencyTable EfficiencyFor(const std::vector<EfficiencyTable>& tables,
                              std::string_view model = {}, int64_t batch = 0, int64_t workers = 0);

// A worker is a steady straggler, for the reason given, when its step
// takes this many times the fastest worker's or more.
inline constexpr double kStragglerRatio = 1.5;

}  // namespace dmlps::advise

#endif  // DMLPS_ADVISE_EFFICIENCY_H_
