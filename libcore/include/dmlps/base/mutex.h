// A mutex, its scoped lock and a condition variable that Clang's thread
// safety analysis understands (-Wthread-safety, on in every clang build):
// members marked GUARDED_BY(mutex_) may only be touched with mutex_ held,
// and functions marked REQUIRES(mutex_) only called so. libstdc++'s
// std::mutex carries no such annotations, hence these thin wrappers. Under
// other compilers the annotations compile to nothing.
#ifndef DMLPS_BASE_MUTEX_H_
#define DMLPS_BASE_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define DMLPS_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define DMLPS_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) DMLPS_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY DMLPS_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) DMLPS_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) DMLPS_THREAD_ANNOTATION(pt_guarded_by(x))
#define ACQUIRE(...) DMLPS_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) DMLPS_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define REQUIRES(...) DMLPS_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) DMLPS_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define NO_THREAD_SAFETY_ANALYSIS DMLPS_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace dmlps {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mutex_.lock(); }
  void Unlock() RELEASE() { mutex_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mutex_;
};

// Holds `*mutex` from construction to the end of the scope.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mutex) ACQUIRE(mutex) : mutex_(mutex) { mutex_->Lock(); }
  ~MutexLock() RELEASE() { mutex_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mutex_;
};

// A condition variable waited on with a Mutex held (the mutex is named at
// each wait, so that the analysis sees which one is required). A wait
// releases the mutex while it sleeps and holds it again when it returns;
// waits may end spuriously, so callers wait in a loop over their
// condition: while (!ready_) cv.Wait(&mutex_). (Lambdas are analysed apart
// from their caller, hence no predicate overloads.)
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  void Wait(Mutex* mutex) REQUIRES(mutex) {
    std::unique_lock<std::mutex> lock(mutex->mutex_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // the caller goes on holding it
  }
  // As Wait, until `deadline` at the latest: false once it has passed.
  bool WaitUntil(Mutex* mutex, std::chrono::steady_clock::time_point deadline) REQUIRES(mutex) {
    std::unique_lock<std::mutex> lock(mutex->mutex_, std::adopt_lock);
    const std::cv_status status = cv_.wait_until(lock, deadline);
    lock.release();
    return status == std::cv_status::no_timeout;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace dmlps

#endif  // DMLPS_BASE_MUTEX_H_
