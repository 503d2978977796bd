// ThreadPool: every iteration runs once, on more than one thread, and the
// pool goes on working loop after loop.
#include "dmlps/base/thread_pool.h"

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace dmlps {
namespace {

TEST_CASE("a thread pool runs every iteration once, its threads and the caller together") {
  ThreadPool pool(3);
  CHECK(pool.threads() == 3);
  for (int64_t count : {0, 1, 2, 7, 1000}) {
    std::vector<std::atomic<int>> runs(static_cast<size_t>(count));
    pool.ParallelFor(count, [&](int64_t i) { runs[static_cast<size_t>(i)].fetch_add(1); });
    for (const std::atomic<int>& r : runs) CHECK(r.load() == 1);
  }
  // Plain writes made in the loop are visible after it returns.
  std::vector<int64_t> squares(5000, -1);
  pool.ParallelFor(5000, [&](int64_t i) { squares[static_cast<size_t>(i)] = i * i; });
  for (size_t i = 0; i < squares.size(); ++i) CHECK(squares[i] == static_cast<int64_t>(i * i));
}

TEST_CASE("a thread pool's iterations run at the same time on different threads") {
  ThreadPool pool(2);
  // Each of two iterations waits (bounded) for the other to start: with one
  // thread they could only run one after the other.
  std::atomic<int> started{0};
  std::atomic<bool> met{true};
  std::vector<std::thread::id> by_iteration(2);
  pool.ParallelFor(2, [&](int64_t i) {
    by_iteration[static_cast<size_t>(i)] = std::this_thread::get_id();
    started.fetch_add(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (started.load() < 2) {
      if (std::chrono::steady_clock::now() > deadline) {
        met = false;
        return;
      }
      std::this_thread::yield();
    }
  });
  CHECK(met.load());
  CHECK(by_iteration[0] != by_iteration[1]);

  // One thread: the caller's alone.
  ThreadPool alone(1);
  CHECK(alone.threads() == 1);
  std::thread::id ran;
  alone.ParallelFor(1, [&](int64_t) { ran = std::this_thread::get_id(); });
  CHECK(ran == std::this_thread::get_id());
}

}  // namespace
}  // namespace dmlps
