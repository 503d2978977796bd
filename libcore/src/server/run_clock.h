// Shard 0's clock of a run: the time evaluations, the report and
// --max-seconds count from, which goes on across a rollback
// (shard_recovery.h), and this server's own start, which its checkpoints'
// training time and the workers' totals count from.
#ifndef DMLPS_SERVER_RUN_CLOCK_H_
#define DMLPS_SERVER_RUN_CLOCK_H_

#include <chrono>
#include <cstdint>
#include <optional>

#include "dmlps/trace/trace.h"
#include "server/loop.h"

namespace dmlps::server {

// Where a run's clock started: when its workers were first all ready.
struct RunClock {
  Clock::time_point start;
  int64_t start_us = 0;  // the same, µs since the Unix epoch (the trace's clock)
};

class RunTimer {
 public:
  // `continues`: the clock of the run this one goes on with after a
  // rollback; none: the clock starts with this server's training.
  explicit RunTimer(std::optional<RunClock> continues) : continues_(continues) {}

  // Training starts now.
  void Start() {
    started_ = true;
    own_start_ = Clock::now();
    own_start_us_ = trace::NowMicros();
    clock_ = continues_.value_or(RunClock{own_start_, own_start_us_});
  }
  bool started() const { return started_; }
  // Whether this run goes on with an earlier one's clock.
  bool continues() const { return continues_.has_value(); }
  // Seconds since the run's start: 0 before it.
  double Seconds() const {
    if (!started_) return 0;
    return std::chrono::duration<double>(Clock::now() - clock_.start).count();
  }
  // The run's clock (continued, or this server's start); zero before
  // started().
  const RunClock& clock() const { return clock_; }
  // The clock a run going on after this one continues; none before this
  // one started and continued none.
  std::optional<RunClock> next() const { return started_ ? clock_ : continues_; }
  // When this server's training started; µs since the Unix epoch as well.
  Clock::time_point own_start() const { return own_start_; }
  int64_t own_start_us() const { return own_start_us_; }
  // Seconds of the run before this server's training started (a rollback's
  // earlier runs and pause). REQUIRES: started().
  double SecondsBefore() const {
    return std::chrono::duration<double>(own_start_ - clock_.start).count();
  }

 private:
  const std::optional<RunClock> continues_;
  bool started_ = false;
  Clock::time_point own_start_;
  int64_t own_start_us_ = 0;
  RunClock clock_;
};

}  // namespace dmlps::server

#endif  // DMLPS_SERVER_RUN_CLOCK_H_
