#include "sim/cpu.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace dmlps::sim {
namespace {

// Remaining work below this is done (seconds): rounding in the processor model.
constexpr double kWorkEpsilon = 1e-12;

}  // namespace

SimCpu::SimCpu(int64_t cores, TickScheduler schedule_tick)
    : cores_(cores), schedule_tick_(std::move(schedule_tick)) {}

void SimCpu::Start(double now, int64_t target, double work, double shared_speed) {
  Advance(now);
  jobs_.push_back({target, work, shared_speed});
  ScheduleTick(now);
}

double SimCpu::Rate(const Job& job) const {
  const auto k = static_cast<double>(jobs_.size());
  const double share = std::min(1.0, static_cast<double>(cores_) / k);
  return (jobs_.size() > 1 ? job.shared_speed : 1.0) * share;
}

void SimCpu::Advance(double now) {
  const double elapsed = now - time_;
  if (elapsed > 0) {
    for (Job& job : jobs_) job.remaining -= elapsed * Rate(job);
  }
  time_ = now;
}

void SimCpu::ScheduleTick(double now) {
  ++generation_;
  if (jobs_.empty()) return;
  double next = std::numeric_limits<double>::infinity();
  for (const Job& job : jobs_) next = std::min(next, std::max(0.0, job.remaining) / Rate(job));
  schedule_tick_(now + next, generation_);
}

std::vector<int64_t> SimCpu::OnTick(double now, uint64_t generation) {
  if (generation != generation_) return {};
  Advance(now);
  std::vector<int64_t> done;
  std::erase_if(jobs_, [&](const Job& job) {
    if (job.remaining > kWorkEpsilon) return false;
    done.push_back(job.target);
    return true;
  });
  ScheduleTick(now);
  return done;
}

}  // namespace dmlps::sim
