// A small fixed set of threads that run the iterations of a loop together
// with the caller's thread, for loops whose iterations touch disjoint data.
#ifndef DMLPS_BASE_THREAD_POOL_H_
#define DMLPS_BASE_THREAD_POOL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "dmlps/base/mutex.h"

namespace dmlps {

class ThreadPool {
 public:
  // `threads` threads in all, the caller's one included: starts threads - 1
  // (none for 1 or less). They sleep between loops.
  explicit ThreadPool(int64_t threads);
  // Stops and joins the threads. REQUIRES: no ParallelFor running.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // The threads that run a loop, the caller's included.
  int64_t threads() const { return static_cast<int64_t>(workers_.size()) + 1; }

  // Runs body(i) once for every i in [0, count), in no set order and on any
  // of the threads, the caller's among them; returns once all have run, and
  // what they wrote is then visible to the caller. `body` must not throw or
  // call ParallelFor. REQUIRES: one ParallelFor at a time.
  void ParallelFor(int64_t count, const std::function<void(int64_t)>& body);

 private:
  // One loop: its iterations are claimed one by one. Shared with the
  // threads, so that one that wakes late claims nothing of a later loop.
  struct Loop;

  void Work() EXCLUDES(mutex_);
  // Claims and runs iterations of `loop` until none is left.
  void RunIterations(Loop& loop) EXCLUDES(mutex_);

  Mutex mutex_;
  CondVar wake_;                                   // a loop was posted, or the pool stops
  CondVar finished_;                               // every iteration of the loop has run
  std::shared_ptr<Loop> loop_ GUARDED_BY(mutex_);  // the loop posted last
  uint64_t posted_ GUARDED_BY(mutex_) = 0;         // loops posted so far
  bool stopping_ GUARDED_BY(mutex_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace dmlps

#endif  // DMLPS_BASE_THREAD_POOL_H_
