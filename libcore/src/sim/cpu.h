// The simulator's processors when workers and server share a host's cores
// (SimConfig::shared_cores >= 1). Two models:
// - processor sharing (slice 0): every job running gets an equal share of
//   the cores, at most one core, all at once;
// - time slices (slice > 0), as an operating system's scheduler runs them:
//   a job has a whole core or none; it runs for a slice, and then goes
//   behind the jobs waiting, if any wait. A job that starts (a process that
//   wakes up) waits ahead of those a slice ended, as the kernel's fair
//   scheduler favours a task that slept. With `wake_preempts` a job that
//   starts while every core is taken does not wait at all: the job
//   furthest into its slice gives its core up and takes the next one
//   free, as the kernel preempts a running task for one that wakes. With
//   a `wake_credit` a job that starts runs its first slice that much
//   longer before a waiting job may take its core, as the kernel's fair
//   scheduler lets a task that slept run until its credit is spent.
// While more than one job runs, each goes at its shared speed
// (CostModel::SharedSpeed); alone, at full speed.
#ifndef DMLPS_SIM_CPU_H_
#define DMLPS_SIM_CPU_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

namespace dmlps::sim {

class SimCpu {
 public:
  // Asks the simulator to call OnTick(`generation`) at virtual time `time`.
  using TickScheduler = std::function<void(double time, uint64_t generation)>;

  // How a host's cores are shared: `slice` seconds (0: processor sharing);
  // with time slices, `wake_preempts` and `wake_credit` (seconds) as above.
  struct Sharing {
    double slice = 0;
    bool wake_preempts = false;
    double wake_credit = 0;
  };

  // A host of `cores` (>= 1) cores, shared as `sharing` says.
  SimCpu(int64_t cores, Sharing sharing, TickScheduler schedule_tick);

  // Starts job `target` at `now`: `work` seconds alone on a core. Jobs
  // running change speed, so the next tick is asked for anew.
  void Start(double now, int64_t target, double work, double shared_speed);
  // The tick asked for with `generation` came at `now`: the jobs done by
  // then, in the order they started, after asking for the next tick. None
  // when the jobs changed since that tick was asked for (it is stale).
  std::vector<int64_t> OnTick(double now, uint64_t generation);

 private:
  struct Job {
    int64_t target = 0;
    double remaining = 0;  // seconds of work alone on a core
    double shared_speed = 1;
    bool running = true;    // time slices: on a core now
    double slice_left = 0;  // time slices: seconds of its slice left
    uint64_t id = 0;
  };

  // The fraction of a core's speed `job` gets now.
  double Rate(const Job& job) const;
  // Brings the jobs' remaining work up to `now`.
  void Advance(double now);
  // Time slices with wake_preempts_: a job that starts takes a core now.
  void Preempt();
  // Time slices: ends the slices that are over, and gives free cores to
  // the jobs waiting, the woken ones first.
  void Dispatch();
  Job* Find(uint64_t id);
  // Asks for a tick when the first job running will be done (or, with
  // time slices, when the first slice ends).
  void ScheduleTick(double now);

  const int64_t cores_;
  const double slice_;
  const bool wake_preempts_;
  const double wake_credit_;
  TickScheduler schedule_tick_;
  std::vector<Job> jobs_;           // in the order they started
  int64_t running_ = 0;             // time slices: jobs on a core
  std::deque<uint64_t> woken_;      // time slices: started, waiting for a core
  std::deque<uint64_t> preempted_;  // time slices: their slice ended, waiting
  uint64_t next_id_ = 1;
  double time_ = 0;  // when jobs_' remaining work was last brought up to date
  uint64_t generation_ = 0;
};

}  // namespace dmlps::sim

#endif  // DMLPS_SIM_CPU_H_
