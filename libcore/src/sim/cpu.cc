#include "sim/cpu.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace dmlps::sim {
namespace {

// Remaining work below this is done (seconds): rounding in the processor model.
constexpr double kWorkEpsilon = 1e-12;

}  // namespace

SimCpu::SimCpu(int64_t cores, Sharing sharing, TickScheduler schedule_tick)
    : cores_(cores),
      slice_(sharing.slice),
      wake_preempts_(sharing.wake_preempts && sharing.slice > 0),
      wake_credit_(sharing.slice > 0 ? sharing.wake_credit : 0),
      schedule_tick_(std::move(schedule_tick)) {}

void SimCpu::Start(double now, int64_t target, double work, double shared_speed) {
  Advance(now);
  Job job{target, work, shared_speed};
  job.id = next_id_++;
  if (slice_ > 0) {
    job.running = false;
    woken_.push_back(job.id);
    // A job with no work is done at once, core or not: it preempts none.
    if (wake_preempts_ && running_ >= cores_ && work > kWorkEpsilon) Preempt();
  }
  jobs_.push_back(job);
  if (slice_ > 0) Dispatch();
  ScheduleTick(now);
}

double SimCpu::Rate(const Job& job) const {
  if (slice_ > 0) {
    if (!job.running) return 0;
    return running_ > 1 ? job.shared_speed : 1.0;
  }
  const auto k = static_cast<double>(jobs_.size());
  const double share = std::min(1.0, static_cast<double>(cores_) / k);
  return (jobs_.size() > 1 ? job.shared_speed : 1.0) * share;
}

void SimCpu::Advance(double now) {
  const double elapsed = now - time_;
  if (elapsed > 0) {
    for (Job& job : jobs_) {
      if (slice_ > 0 && job.running) job.slice_left -= elapsed;
      job.remaining -= elapsed * Rate(job);
    }
  }
  time_ = now;
}

SimCpu::Job* SimCpu::Find(uint64_t id) {
  for (Job& job : jobs_) {
    if (job.id == id) return &job;
  }
  return nullptr;
}

void SimCpu::Preempt() {
  // The job furthest into its slice gives its core up, and takes the next.
  Job* victim = nullptr;
  for (Job& job : jobs_) {
    if (job.running && (victim == nullptr || job.slice_left < victim->slice_left)) victim = &job;
  }
  if (victim == nullptr) return;
  victim->running = false;
  --running_;
  preempted_.push_front(victim->id);
}

void SimCpu::Dispatch() {
  // A slice that is over gives its core up if any job waits for one.
  for (Job& job : jobs_) {
    if (!job.running || job.slice_left > kWorkEpsilon) continue;
    if (woken_.empty() && preempted_.empty()) {
      job.slice_left = slice_;
      continue;
    }
    job.running = false;
    --running_;
    preempted_.push_back(job.id);
  }
  while (running_ < cores_ && !(woken_.empty() && preempted_.empty())) {
    const bool woke = !woken_.empty();
    std::deque<uint64_t>& from = woke ? woken_ : preempted_;
    Job* job = Find(from.front());
    from.pop_front();
    job->running = true;
    job->slice_left = slice_ + (woke ? wake_credit_ : 0);
    ++running_;
  }
}

void SimCpu::ScheduleTick(double now) {
  ++generation_;
  if (jobs_.empty()) return;
  double next = std::numeric_limits<double>::infinity();
  for (const Job& job : jobs_) {
    const double rate = Rate(job);
    if (rate <= 0) {
      if (job.remaining <= kWorkEpsilon) next = 0;  // no work: done without a core
      continue;
    }
    next = std::min(next, std::max(0.0, job.remaining) / rate);
    if (slice_ > 0) next = std::min(next, std::max(0.0, job.slice_left));
  }
  if (next < std::numeric_limits<double>::infinity()) schedule_tick_(now + next, generation_);
}

std::vector<int64_t> SimCpu::OnTick(double now, uint64_t generation) {
  if (generation != generation_) return {};
  Advance(now);
  std::vector<int64_t> done;
  std::erase_if(jobs_, [&](const Job& job) {
    if (job.remaining > kWorkEpsilon) return false;
    if (job.running && slice_ > 0) {
      --running_;
    } else if (slice_ > 0) {  // no work at all, still waiting for a core
      std::erase(woken_, job.id);
      std::erase(preempted_, job.id);
    }
    done.push_back(job.target);
    return true;
  });
  if (slice_ > 0) Dispatch();
  ScheduleTick(now);
  return done;
}

}  // namespace dmlps::sim
