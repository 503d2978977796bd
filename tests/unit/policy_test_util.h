// Counting a policy's actions, for the policy tests.
#ifndef DMLPS_TESTS_UNIT_POLICY_TEST_UTIL_H_
#define DMLPS_TESTS_UNIT_POLICY_TEST_UTIL_H_

#include <algorithm>

#include "dmlps/sync/policy.h"

namespace dmlps::sync::testing {

// Actions of `kind` in the list.
inline int64_t Count(const Actions& actions, Action::Kind kind) {
  return std::count_if(actions.begin(), actions.end(),
                       [&](const Action& a) { return a.kind == kind; });
}

// Actions of `kind` addressed to worker w.
inline int64_t CountFor(const Actions& actions, Action::Kind kind, WorkerId w) {
  return std::count_if(actions.begin(), actions.end(),
                       [&](const Action& a) { return a.kind == kind && a.worker == w; });
}

}  // namespace dmlps::sync::testing

#endif  // DMLPS_TESTS_UNIT_POLICY_TEST_UTIL_H_
