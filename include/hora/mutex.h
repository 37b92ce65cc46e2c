// Mutex, MutexLock, CondVar: std::mutex, std::lock_guard and std::condition_variable with
// clang's thread-safety annotations (hora/thread_annotations.h), so that members marked
// HORA_GUARDED_BY(mu_) are checked at compile time. No behaviour of their own: every call is
// the standard library's.
//
// Waiting follows LevelDB's port::CondVar: the caller holds the mutex (through a MutexLock)
// and loops on its condition, so the analysis sees every guarded read under the lock:
//   MutexLock lock(&mu_);
//   while (!done_) cv_.wait(mu_);
// Thread-safety: as the standard types they wrap. Not copyable or movable.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "hora/thread_annotations.h"

namespace hora {

class HORA_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() HORA_ACQUIRE() { mu_.lock(); }
  void unlock() HORA_RELEASE() { mu_.unlock(); }
  bool try_lock() HORA_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis this thread holds the mutex (no run-time check).
  void assert_held() const HORA_ASSERT_HELD(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// A mutex whose lock can give up at a deadline. Built from Mutex and a condition variable
// rather than std::timed_mutex, whose timed lock (pthread_mutex_clocklock) ThreadSanitizer
// does not see.
class HORA_CAPABILITY("mutex") TimedMutex {
 public:
  TimedMutex() = default;
  TimedMutex(const TimedMutex&) = delete;
  TimedMutex& operator=(const TimedMutex&) = delete;

  void lock() HORA_ACQUIRE() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !held_; });
    held_ = true;
  }
  void unlock() HORA_RELEASE() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      held_ = false;
    }
    cv_.notify_one();
  }
  // True with the mutex held; false (not held) once `at` passed.
  template <typename Clock, typename Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& at) HORA_TRY_ACQUIRE(true) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_until(lock, at, [this] { return !held_; })) return false;
    held_ = true;
    return true;
  }

 private:
  std::mutex mu_;               // guards held_ (plain std types: this is a capability itself)
  std::condition_variable cv_;  // held_ became false
  bool held_ = false;
};

// Holds `mu` for its lifetime.
template <typename M>
class HORA_SCOPED_CAPABILITY BasicMutexLock {
 public:
  explicit BasicMutexLock(M* mu) HORA_ACQUIRE(mu) : mu_(mu) { mu_->lock(); }
  ~BasicMutexLock() HORA_RELEASE() { mu_->unlock(); }
  BasicMutexLock(const BasicMutexLock&) = delete;
  BasicMutexLock& operator=(const BasicMutexLock&) = delete;

 private:
  M* const mu_;
};
using MutexLock = BasicMutexLock<Mutex>;

class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // Releases `mu` while blocked and holds it again on return (spurious wake-ups included:
  // loop on the condition). REQUIRES: this thread holds `mu`.
  void wait(Mutex& mu) HORA_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // The same, returning false once `at` passed (true on a notification or spuriously).
  template <typename Clock, typename Duration>
  bool wait_until(Mutex& mu, const std::chrono::time_point<Clock, Duration>& at) HORA_REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    const bool woken = cv_.wait_until(lock, at) == std::cv_status::no_timeout;
    lock.release();
    return woken;
  }
  void notify_one() { cv_.notify_one(); }
  void notify_all() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace hora
