// Driving a policy by script and looking into its actions, for the policy
// tests; virtual time for the tests that play workers in it.
#ifndef DMLPS_TESTS_UNIT_POLICY_TEST_UTIL_H_
#define DMLPS_TESTS_UNIT_POLICY_TEST_UTIL_H_

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <queue>
#include <random>
#include <utility>
#include <variant>
#include <vector>

#include "dmlps/auto/auto.h"
#include "dmlps/sync/policy.h"

namespace dmlps::sync::testing {

// Seconds a step for `n` workers, each drawn from [5, 20) ms, the last then
// made 4x slower: the randomized straggler the policy tests play.
inline std::vector<double> RandomStepSeconds(std::mt19937_64& rng, int64_t n) {
  std::vector<double> step_s;
  for (int64_t w = 0; w < n; ++w) {
    step_s.push_back(std::uniform_real_distribution<double>(0.005, 0.02)(rng));
  }
  step_s.back() *= 4;
  return step_s;
}

// The worker an action (or a driver's effect, driver_test_util.h)
// addresses; -1 for those that address none (Apply, ApplyDelta).
template <typename... Alternatives>
WorkerId WorkerOf(const std::variant<Alternatives...>& action) {
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

// The one action in `actions`, which must be a Drop (a refused push); a copy,
// so that `actions` may be a temporary.
inline Drop OnlyDrop(const Actions& actions) {
  REQUIRE(actions.size() == 1);
  REQUIRE(Is<Drop>(actions[0]));
  return std::get<Drop>(actions[0]);
}

// The policy `config` names, with every worker joined (each with `info`);
// what the joins did is of no interest.
inline std::unique_ptr<Policy> MakeJoined(const PolicyConfig& config, const WorkerInfo& info = {}) {
  // auto's room makes auto, and every other policy as sync does.
  Result<std::unique_ptr<Policy>> made = autopolicy::MakePolicy(config);
  REQUIRE(made.ok());
  Actions ignored;
  for (WorkerId w = 0; w < config.job.workers; ++w) (*made)->WorkerJoined(w, info, &ignored);
  return std::move(made).value();
}

// The actions with which the policy answers worker w's push.
inline Actions PushActions(Policy* policy, WorkerId w, const PushInfo& push) {
  Actions actions;
  policy->PushArrived(w, push, &actions);
  return actions;
}

// The actions with which the policy answers each of `workers` pushing
// `push`, in that order.
inline Actions PushEach(Policy* policy, std::initializer_list<WorkerId> workers,
                        const PushInfo& push) {
  Actions actions;
  for (WorkerId w : workers) policy->PushArrived(w, push, &actions);
  return actions;
}

// The actions with which the policy answers workers 0 to n - 1 asking for the
// model, in that order.
inline Actions PullEach(Policy* policy, int64_t n) {
  Actions actions;
  for (WorkerId w = 0; w < n; ++w) policy->PullRequested(w, &actions);
  return actions;
}

// Closes round 0 of a two-worker synchronous policy, then has worker 0 push
// its round-1 gradient computed on version 0, a stale one; returns the
// actions with which the policy answers that push.
inline Actions PushStale(Policy* policy, int64_t samples) {
  PushEach(policy, {0, 1}, {0, 0, samples, true});
  REQUIRE(policy->version() == 1);
  return PushActions(policy, 0, {1, 0, samples, true});
}

// Virtual time, for the tests that play workers in it: each worker has at
// most one piece of work in progress (a step, a chunk, a token); work ends in
// time order, ties in the order it started.
class VirtualTime {
 public:
  // Worker w starts work that takes `seconds` from now.
  void Start(WorkerId w, double seconds) { heap_.push({now_ + seconds, next_seq_++, w}); }
  // Whether no work is in progress.
  bool empty() const { return heap_.empty(); }
  // Whether some work ends by `until`.
  bool Due(double until) const { return !heap_.empty() && heap_.top().time <= until; }
  // Moves on to the end of the next work and returns whose it is.
  // REQUIRES: !empty().
  WorkerId Next() {
    const Event event = heap_.top();
    heap_.pop();
    now_ = event.time;
    return event.worker;
  }
  double now() const { return now_; }

 private:
  struct Event {
    double time;
    int64_t seq;
    WorkerId worker;
  };
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      return a.time != b.time ? a.time > b.time : a.seq > b.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  double now_ = 0;
  int64_t next_seq_ = 0;
};

}  // namespace dmlps::sync::testing

#endif  // DMLPS_TESTS_UNIT_POLICY_TEST_UTIL_H_
