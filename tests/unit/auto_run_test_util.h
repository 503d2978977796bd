// The auto policy run on virtual time against workers of given step
// times: what its decisions read and choose (policy_auto_test.cc,
// policy_auto_readings_test.cc).
#ifndef DMLPS_TESTS_UNIT_AUTO_RUN_TEST_UTIL_H_
#define DMLPS_TESTS_UNIT_AUTO_RUN_TEST_UTIL_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dmlps/sync/policy.h"
#include "dmlps/sync/switching.h"

namespace dmlps::sync::testing {

// Samples per step of every worker RunAuto plays.
inline constexpr int64_t kAutoBatch = 8;

// The default candidates' list with bsp first: auto starts under bsp.
inline const std::vector<std::string> kFromBsp = {"bsp", "backup:1", "ssp:3", "lbbsp"};

// Runs auto on n workers of the given step times for `until` virtual
// seconds; returns its decisions and the policy it ends under.
struct AutoRun {
  std::vector<Decision> decisions;
  std::vector<Switch> switches;
  std::string running;
};

// With `accuracy`, an evaluation every 10 iterations at accuracy(iteration)
// and a target of 0.85.
// `candidates` as --candidates gives them (empty: the default,
// AutoCandidates); `model` names the job's model, whose efficiency table auto reads.
// Each step's computing had a core for `core_share` of its time; with
// `send_s`, each push took that long to send after it; with `pause_s`, each
// step paused that long after computing (part of its busy time, not of
// its computing). With `background`, auto predicts on a thread of its own,
// as in the server, and every push takes 0.2 ms of wall-clock time, so that
// the predictions come back while the run goes on; the run then goes on
// past `until` until a switch is done (at most 60 s of wall clock).
AutoRun RunAuto(int64_t n, const std::function<double(WorkerId, int64_t)>& step_s, double until,
                const std::function<double(int64_t)>& accuracy = {},
                std::vector<std::string> candidates = kFromBsp, std::string model = "",
                double core_share = 1, const std::function<double(WorkerId, int64_t)>& send_s = {},
                const std::function<double(WorkerId, int64_t)>& share_of = {},
                int64_t host_cores = 0,
                const std::function<double(WorkerId, int64_t)>& pause_s = {},
                bool background = false);

}  // namespace dmlps::sync::testing

#endif  // DMLPS_TESTS_UNIT_AUTO_RUN_TEST_UTIL_H_
