// What every measurement of dmlps-bench transport shares: the clock and
// its constants, the stop flag and first error of a measurement's threads
// (Shared), threads joined on every path (Threads) and the private folder
// of the ipc sockets (TempDir).
#ifndef DMLPS_BENCH_TRANSPORT_SUPPORT_H_
#define DMLPS_BENCH_TRANSPORT_SUPPORT_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "dmlps/base/mutex.h"
#include "dmlps/base/status.h"

namespace dmlps::bench {

using Clock = std::chrono::steady_clock;

// How long one wait lasts before it looks at the stop flags again.
inline constexpr std::chrono::milliseconds kSlice{20};
// The bench server's learning rate: small, so that the model stays finite
// however many rounds run.
inline constexpr double kLearningRate = 1e-6;
inline constexpr float kGradientValue = 1e-3f;
// Turns the rounds of each measurement are taken in.
inline constexpr int64_t kTurns = 3;

// Names the calling thread, for top and perf (at most 15 characters).
void NameThread(const std::string& name);

inline double Millis(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// A ZeroMQ exception as a Status, prefixed with what failed.
Status FromZmq(const zmq::error_t& e, const std::string& what);

// What the threads of one measurement share: when to stop, and the first
// error any of them met.
class Shared {
 public:
  explicit Shared(const std::atomic<int>* signal) : signal_(signal) {}

  bool Stopping() const { return failed_.load() || (signal_ != nullptr && signal_->load() != 0); }
  // Why the threads stop: the first error, or the signal.
  Status Reason() EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    if (!error_.ok()) return error_;
    return Status::Unavailable("interrupted");
  }
  void Fail(const Status& status) EXCLUDES(mutex_) {
    MutexLock lock(&mutex_);
    if (error_.ok()) error_ = status;
    failed_ = true;
  }

 private:
  const std::atomic<int>* signal_;
  std::atomic<bool> failed_{false};
  Mutex mutex_;
  Status error_ GUARDED_BY(mutex_);  // the first error, once failed_
};

// Joins its threads on every path out of a scope, after telling them to quit.
class Threads {
 public:
  ~Threads() { JoinAll(); }
  void Start(std::function<void()> body) { threads_.emplace_back(std::move(body)); }
  void JoinAll() {
    quit_ = true;
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
    threads_.clear();
  }
  bool quitting() const { return quit_.load(); }
  // For threads that wait for others: only the second group quits.
  const std::atomic<bool>& quit_flag() const { return quit_; }

 private:
  std::vector<std::thread> threads_;
  std::atomic<bool> quit_{false};
};

// A private folder for the ipc sockets, removed with everything in it.
class TempDir {
 public:
  // Under $TMPDIR, or /tmp when that is unset or too long for ipc paths.
  static Result<TempDir> Make();
  TempDir() = default;
  TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, {})) {}
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace dmlps::bench

#endif  // DMLPS_BENCH_TRANSPORT_SUPPORT_H_
