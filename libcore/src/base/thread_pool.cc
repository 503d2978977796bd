#include "dmlps/base/thread_pool.h"

#include <atomic>
#include <system_error>

namespace dmlps {

struct ThreadPool::Loop {
  const std::function<void(int64_t)>* body = nullptr;
  int64_t count = 0;
  std::atomic<int64_t> next{0};  // the next iteration to claim
  std::atomic<int64_t> done{0};  // iterations run
};

ThreadPool::ThreadPool(int64_t threads) {
  for (int64_t i = 1; i < threads; ++i) {
    try {
      workers_.emplace_back([this] { Work(); });
    } catch (const std::system_error&) {
      break;  // the system has no more threads to give: loops run on fewer
    }
  }
}

ThreadPool::~ThreadPool() {
  {
    MutexLock lock(&mutex_);
    stopping_ = true;
  }
  wake_.SignalAll();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::ParallelFor(int64_t count, const std::function<void(int64_t)>& body) {
  if (count <= 0) return;
  if (workers_.empty() || count == 1) {
    for (int64_t i = 0; i < count; ++i) body(i);
    return;
  }
  auto loop = std::make_shared<Loop>();
  loop->body = &body;
  loop->count = count;
  {
    MutexLock lock(&mutex_);
    loop_ = loop;
    ++posted_;
  }
  wake_.SignalAll();
  RunIterations(*loop);
  MutexLock lock(&mutex_);
  // The acquire pairs with each thread's release of its count: their
  // writes are visible once the sum is complete.
  while (loop->done.load(std::memory_order_acquire) != count) finished_.Wait(&mutex_);
}

void ThreadPool::RunIterations(Loop& loop) {
  int64_t ran = 0;
  for (int64_t i = loop.next.fetch_add(1, std::memory_order_relaxed); i < loop.count;
       i = loop.next.fetch_add(1, std::memory_order_relaxed)) {
    (*loop.body)(i);
    ++ran;
  }
  if (ran == 0) return;  // a thread that came late: the loop may be gone
  if (loop.done.fetch_add(ran, std::memory_order_acq_rel) + ran == loop.count) {
    // Under the lock, so that the caller cannot miss it between its check
    // and its wait.
    MutexLock lock(&mutex_);
    finished_.SignalAll();
  }
}

void ThreadPool::Work() {
  uint64_t seen = 0;
  for (;;) {
    std::shared_ptr<Loop> loop;
    {
      MutexLock lock(&mutex_);
      while (!stopping_ && posted_ == seen) wake_.Wait(&mutex_);
      if (stopping_) return;
      seen = posted_;
      loop = loop_;
    }
    RunIterations(*loop);
  }
}

}  // namespace dmlps
