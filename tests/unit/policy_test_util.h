// Looking into a policy's actions, for the policy tests.
#ifndef DMLPS_TESTS_UNIT_POLICY_TEST_UTIL_H_
#define DMLPS_TESTS_UNIT_POLICY_TEST_UTIL_H_

#include <algorithm>
#include <cstddef>
#include <variant>

#include "dmlps/sync/policy.h"

namespace dmlps::sync::testing {

// The worker an action addresses; -1 for Apply and ApplyDelta, which address none.
inline WorkerId WorkerOf(const Action& action) {
  return std::visit(
      [](const auto& a) -> WorkerId {
        if constexpr (requires { a.worker; }) {
          return a.worker;
        } else {
          return -1;
        }
      },
      action);
}

// Whether `action` is a T.
template <typename T>
bool Is(const Action& action) {
  return std::holds_alternative<T>(action);
}

// Actions of type T in the list.
template <typename T>
int64_t Count(const Actions& actions) {
  return std::count_if(actions.begin(), actions.end(), [](const Action& a) { return Is<T>(a); });
}

// Actions of type T addressed to worker w.
template <typename T>
int64_t CountFor(const Actions& actions, WorkerId w) {
  return std::count_if(actions.begin(), actions.end(),
                       [&](const Action& a) { return Is<T>(a) && WorkerOf(a) == w; });
}

// Where the first action of type T (for worker w, unless w < 0) is;
// actions.size() when there is none. For checks of their order.
template <typename T>
std::ptrdiff_t IndexOf(const Actions& actions, WorkerId w = -1) {
  auto it = std::find_if(actions.begin(), actions.end(),
                         [&](const Action& a) { return Is<T>(a) && (w < 0 || WorkerOf(a) == w); });
  return it - actions.begin();
}

// The first action of type T (for worker w, unless w < 0), or null.
template <typename T>
const T* Find(const Actions& actions, WorkerId w = -1) {
  const std::ptrdiff_t i = IndexOf<T>(actions, w);
  return i == static_cast<std::ptrdiff_t>(actions.size()) ? nullptr : &std::get<T>(actions[i]);
}

}  // namespace dmlps::sync::testing

#endif  // DMLPS_TESTS_UNIT_POLICY_TEST_UTIL_H_
