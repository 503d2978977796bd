// The auto policy run on virtual time against workers of given step
// times: what its decisions read and choose (policy_auto_test.cc,
// policy_auto_readings_test.cc).
#ifndef DMLPS_TESTS_UNIT_AUTO_RUN_TEST_UTIL_H_
#define DMLPS_TESTS_UNIT_AUTO_RUN_TEST_UTIL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "dmlps/auto/env.h"
#include "dmlps/sync/policy.h"
#include "dmlps/sync/switching.h"

namespace dmlps::sync::testing {

// Samples per step of every worker RunAuto plays.
inline constexpr int64_t kAutoBatch = 8;

// The default candidates' list with bsp first: auto starts under bsp.
inline const std::vector<std::string> kFromBsp = {"bsp", "backup:1", "ssp:3", "lbbsp"};

// What a run of auto did.
struct AutoRun {
  std::vector<Decision> decisions;
  std::vector<Switch> switches;
  std::string running;
};

// How RunAuto plays its workers and sets auto up; each field's default
// leaves it out.
struct AutoRunOptions {
  // An evaluation every 10 iterations at accuracy(iteration), and a
  // target of 0.85.
  std::function<double(int64_t)> accuracy;
  // As --candidates gives them (empty: the default, AutoCandidates).
  std::vector<std::string> candidates = kFromBsp;
  // The job's model, whose efficiency table auto reads.
  std::string model;
  // The share of each step's computing that had a core (share_of: per
  // worker and step, in its place).
  double core_share = 1;
  std::function<double(WorkerId, int64_t)> share_of;
  // How long each push took to send after its step.
  std::function<double(WorkerId, int64_t)> send_s;
  // Every worker's WorkerInfo::host_cores.
  int64_t host_cores = 0;
  // How long each step paused after computing (part of its busy time, not
  // of its computing).
  std::function<double(WorkerId, int64_t)> pause_s;
  // Auto predicts on a thread of its own, as in the server, and every push
  // takes 0.2 ms of wall-clock time, so that the predictions come back
  // while the run goes on; the run then goes on past `until` until a
  // switch is done (at most 60 s of wall clock).
  bool background = false;
  // Iterations between decisions (PolicyConfig::decide_every; 0: its default).
  int64_t every = 0;
  // What a worker reports of each step in place of what it played (busy_s,
  // compute_s, samples...): a worker whose clock is broken, or that lies.
  // The server's cycle_s stays what the step took.
  std::function<void(WorkerId, int64_t, PushInfo*)> reported;
  // The clock and the thread auto predicts on (null: autopolicy::SystemEnv).
  std::shared_ptr<autopolicy::Env> env;
};

// Step times of 10 ms, each held up to `held_s` at random one step in
// `one_in` (worker `heavy`, if any, one step in two).
std::function<double(WorkerId, int64_t)> RandomDelays(double held_s, int one_in,
                                                      WorkerId heavy = -1);

// Runs auto on n workers of the given step times for `until` virtual
// seconds; returns its decisions and the policy it ends under.
AutoRun RunAuto(int64_t n, const std::function<double(WorkerId, int64_t)>& step_s, double until,
                const AutoRunOptions& options = {});

}  // namespace dmlps::sync::testing

#endif  // DMLPS_TESTS_UNIT_AUTO_RUN_TEST_UTIL_H_
