// Which synchronization policy suits a cluster as measured: the prediction
// engine behind `dmlps-bench advise` (and, later, a server choosing its own
// policy at round boundaries). Pure: measurements in, predictions out, no
// I/O. The engine is the simulator on timing alone (sim::SimulateTiming),
// calibrated on the measurements and running each candidate policy's own
// code, times each policy's statistical efficiency (iterations to a target
// relative to BSP) from a table learned from runs (efficiency.h).
#ifndef DMLPS_ADVISE_ADVISOR_H_
#define DMLPS_ADVISE_ADVISOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "dmlps/advise/efficiency.h"
#include "dmlps/base/status.h"

namespace dmlps::advise {

// One worker as measured. A lasting slowness (a slower machine, a steady
// co-tenant) is in step_s; a passing one (a spike, a GC pause) in the delays.
struct WorkerProfile {
  double step_s = 0;      // a step of ClusterProfile::batch samples now, seconds: the steady level
  double jitter = 0;      // log-sd of the undelayed steps around step_s (lognormal noise)
  double delay_prob = 0;  // the share of steps held up by a transient delay, [0, 1)
  double delay_s = 0;     // such a delay's mean length beyond step_s, seconds
  // The share of its computing time it had a core, (0, 1]: 1 less its run
  // delay (the time it was ready but waited for a core) over the time it
  // computed. 1: a core of its own whenever it computed, or not measured.
  double core_share = 1;
};

// A cluster as measured: its workers, its links and its server.
struct ClusterProfile {
  std::vector<WorkerProfile> workers;  // by rank; at least one
  int64_t batch = 0;                   // samples per worker step
  int64_t num_params = 0;              // parameters a push carries
  double link_gbps = 10;               // each link's bandwidth, Gbit/s (0: unlimited)
  double latency_s = 50e-6;            // one way, per message
  double param_s = 1e-9;               // the server's pass over the parameters, per parameter
  double message_s = 10e-6;            // the server's fixed cost per message
  // Delays that take turns (RotatingDelay), seconds; 0: none. In each
  // iteration one worker is held up this long, the next one in the next,
  // as a round-robin straggler is; simulated so rather than as each
  // worker's independent delays (which take this one's place), since a
  // policy that drops the slowest push avoids every one of them.
  double rotation_s = 0;
  // The cores the workers share where known better than their shares say
  // (auto: the fewest read so far in the run); 0: SharedCores reads them
  // from the shares.
  int64_t cores = 0;
};

// One worker's measured steps, for RotatingDelay: the clock (the worker's
// step count) and the time of each.
struct StepTimes {
  std::vector<int64_t> clocks;
  std::vector<double> seconds;
};

// The delay that takes turns among `workers` (by rank; at least two), or
// 0 when their delays do not: each worker's steps on one residue of its
// clock mod the number of workers (its turn, kMinTurns of them or more)
// are slower in their lower quartile than its other steps in their upper
// one, and no two workers share their turn. A delay that hits every worker
// in the same iteration, or each at random, is none. The delay: the median
// over the workers of its turns' median step less its others'.
double RotatingDelay(const std::vector<StepTimes>& workers);
inline constexpr int64_t kMinTurns = 2;

// Every problem with `profile`, one message each; empty if none.
std::vector<std::string> ValidateProfile(const ClusterProfile& profile);

// One candidate's prediction.
struct Prediction {
  std::string policy;            // as named in the candidates ("ssp:3")
  double iteration_s = 0;        // predicted time per iteration
  double compute_ratio = 0;      // mean share of the time workers compute
  double efficiency = 1;         // iterations to the target relative to BSP
  bool efficiency_known = true;  // false: not in the table, taken as BSP's
  // The table row it was priced by: the candidate's own, or that of the
  // same policy with another parameter ("ssp:3" for "ssp:7",
  // EfficiencyTable::Find); empty when not known.
  std::string efficiency_row;
  // efficiency * iteration_s: the time the policy needs for the progress
  // one BSP iteration makes, what the ranking compares.
  double effective_s = 0;
  double time_to_target_s = 0;  // 0: unknown (no BSP iteration count to scale)
  std::string failure;          // why it could not be simulated (then not ranked)
};

struct Advice {
  std::vector<Prediction> predictions;  // in candidate order
  std::string recommended;              // a candidate's name
  std::string reason;                   // one line
};

// Iterations simulated per candidate unless asked otherwise. Rounds in
// which several workers are delayed at once are rare (three of four, each
// delayed one step in five: one round in 37), and a short simulation
// prices them by chance; 300 prices them as the fixed runs measure them,
// and elsewhere 100 and 1,000 agree within 4% (docs/advise.md, "How it
// predicts").
inline constexpr int64_t kSimIterations = 300;

struct AdvisorOptions {
  std::vector<std::string> candidates;  // empty: DefaultCandidates(profile)
  int64_t iterations = kSimIterations;  // simulated per candidate
  // Iterations BSP needs to the target; 0: unknown, times to target stay 0.
  double bsp_iterations_to_target = 0;
  uint64_t seed = 1;  // the simulated delays' and noise's
};

// The policies worth comparing on `profile`: those dmlps-bench compares by
// default plus backup; every one works with built-in and external models.
std::vector<std::string> DefaultCandidates(const ClusterProfile& profile);

// BSP is recommended whenever its effective time is within this share of
// the best: it is exact and deterministic, so a smaller gain is not worth
// giving that up (and is below what the predictions can tell apart).
inline constexpr double kPreferBspWithin = 0.05;

// Predicts every candidate on a profile. Stateless apart from its table, so
// one Advisor serves any number of decisions; about a millisecond of
// simulation per candidate for 4 workers.
class Advisor {
 public:
  explicit Advisor(EfficiencyTable table) : table_(std::move(table)) {}

  // InvalidArgument for a bad profile or a candidate that names no policy.
  // A candidate whose simulation fails gets its failure and is not ranked;
  // when none can be ranked, Internal.
  Result<Advice> Advise(const ClusterProfile& profile, const AdvisorOptions& options) const;

  const EfficiencyTable& table() const { return table_; }

 private:
  EfficiencyTable table_;
};

// The slowest worker's steady step over the fastest's (1 for one worker):
// where between the efficiency table's columns the cluster lies.
double SlowestRatio(const ClusterProfile& profile);

// What the transient delays add to a step on average, over the fastest
// worker's step: the most delayed worker's delay_prob x delay_s, or under
// a rotating delay its share of it (rotation_s over the workers); where
// between the efficiency table's even and delays columns the cluster lies.
double DelayCost(const ClusterProfile& profile);

// The cores the workers share, as the workers of one host with fewer cores
// than they need do, or 0 when each seems to have a machine of its own:
// when the median worker had a core for under kSharedBelow of its
// computing time, as many cores as the workers' shares add up to (at least
// one); profile.cores where set. On shared cores a policy that waits for
// fewer workers gains less than on machines of their own: the workers it
// leaves behind still take their turns on the cores, though after those
// that woke up to the new model.
int64_t SharedCores(const ClusterProfile& profile);
inline constexpr double kSharedBelow = 0.8;

// SharedCores(profile), at most `host_cores` where that is set (> 0): the
// cores of the one host every worker runs on, the server's
// (WorkerInfo::host_cores; in traces the server's "worker admitted"
// instants). The workers' shares added up overstate the cores where they do
// not all compute at once: four workers on two cores read 3 under BSP and
// backup:1, whose rounds leave one worker computing while the others wait.
int64_t SharedCoresAtMost(const ClusterProfile& profile, int64_t host_cores);

// The cores of the host every worker in `host_cores` (one per worker, 0 for
// one elsewhere or not known) runs on, the fewest any reports; 0 unless
// every one reports some.
int64_t CommonHostCores(const std::vector<int64_t>& host_cores);

// The robust log-sd of `values` (of the positive ones): 1.4826 times the
// median absolute deviation of their logs from the median's, at most
// `most`; 0 for none. How the measurers take a worker's jitter.
double LogSpread(const std::vector<double>& values, double most = 1);

// The same from the workers' core shares alone.
int64_t SharedCoresOf(const std::vector<double>& core_shares);

// The workers' median core share (1 for none).
double TypicalShare(const ClusterProfile& profile);

// Whether a worker's steady step takes kStragglerRatio times the fastest's
// or more: a steady straggler, as the reason calls it.
bool HasSteadyStraggler(const ClusterProfile& profile);

// The profile's most telling feature in words: "worker-3 steadily 4.0x
// slower than the fastest", "transient delays on worker-1 (20% of steps,
// +50 ms)" or "an even cluster (steps within 1.2x of each other)", and
// "on 2 shared cores" after it where SharedCores says so.
std::string DescribeProfile(const ClusterProfile& profile);

// The kind of that feature, the same while the cluster stays as it is:
// "worker-3 steadily slower" (the worker named), "transient delays" (on
// whichever workers, or taking turns: fewer steps read a rotation as
// delays) or "an even cluster".
std::string FeatureKind(const ClusterProfile& profile);

// Whether that feature is transient delays: a rate read off a few steps a
// worker, where a straggler's level is read off every one of them.
bool ReadsDelays(const ClusterProfile& profile);

}  // namespace dmlps::advise

#endif  // DMLPS_ADVISE_ADVISOR_H_
