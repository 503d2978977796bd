// The simulator's events and their queue, in virtual time.
#ifndef DMLPS_SIM_EVENTS_H_
#define DMLPS_SIM_EVENTS_H_

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

namespace dmlps::sim {

enum class EventKind {
  kAtServer,  // a: message slot
  kAtWorker,  // a: message slot
  kJobDone,   // a: job target (dedicated machines)
  kCpuTick,   // b: generation (shared cores)
  kWake,      // a: worker, b: which of its threads (WorkerThread)
  kTimeLimit,
};

struct Event {
  double time = 0;
  uint64_t seq = 0;  // ties go first come, first served
  EventKind kind = EventKind::kTimeLimit;
  int64_t a = 0;
  uint64_t b = 0;
  bool operator>(const Event& other) const {
    return time != other.time ? time > other.time : seq > other.seq;
  }
};

// Events in the order they happen; those at the same time in the order
// they were scheduled, so a run is the same for the same seed.
class EventQueue {
 public:
  void Schedule(double time, EventKind kind, int64_t a, uint64_t b = 0) {
    queue_.push(Event{time, next_seq_++, kind, a, b});
  }
  bool empty() const { return queue_.empty(); }
  // The next event, taken off the queue. REQUIRES: !empty().
  Event Pop() {
    const Event event = queue_.top();
    queue_.pop();
    return event;
  }

 private:
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  uint64_t next_seq_ = 0;
};

}  // namespace dmlps::sim

#endif  // DMLPS_SIM_EVENTS_H_
