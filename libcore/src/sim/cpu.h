// The simulator's processors when workers and server share a host's cores
// (SimConfig::shared_cores >= 1): processor sharing. Every job running gets
// an equal share of the cores, at most one core; while others run it goes
// at its shared speed (CostModel::SharedSpeed), alone at full speed.
#ifndef DMLPS_SIM_CPU_H_
#define DMLPS_SIM_CPU_H_

#include <cstdint>
#include <functional>
#include <vector>

namespace dmlps::sim {

class SimCpu {
 public:
  // Asks the simulator to call OnTick(`generation`) at virtual time `time`.
  using TickScheduler = std::function<void(double time, uint64_t generation)>;

  // A host of `cores` (>= 1) cores.
  SimCpu(int64_t cores, TickScheduler schedule_tick);

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
  };

  // The fraction of a core's speed `job` gets now.
  double Rate(const Job& job) const;
  // Brings the jobs' remaining work up to `now`.
  void Advance(double now);
  // Asks for a tick when the first job running will be done.
  void ScheduleTick(double now);

  const int64_t cores_;
  TickScheduler schedule_tick_;
  std::vector<Job> jobs_;
  double time_ = 0;  // when jobs_' remaining work was last brought up to date
  uint64_t generation_ = 0;
};

}  // namespace dmlps::sim

#endif  // DMLPS_SIM_CPU_H_
