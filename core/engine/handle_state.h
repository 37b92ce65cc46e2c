// HandleState: what a Handle (hora/types.h) points at. The engine's background thread
// completes it; any thread waits on it. A grouped allreduce shares one state among its
// members: it completes when the last member did, with the first error seen.
//
// Completion callbacks (Handle::on_complete): the last complete() takes the callback out
// under the mutex, runs it with the mutex released, and only then marks the state done and
// wakes the waiters, so a thread that returns from wait() sees the callback's effects. A
// callback registered once the final status is known (done, or being delivered) runs at once
// on the registering thread. Each registered callback runs exactly once.
//
// Completion without the mutex: `phase` goes kPending -> kDone by one compare-and-swap when a
// single-part state completes OK while nobody watches it. A thread that is about to block on
// cv, or registers a callback, first moves it kPending -> kWatched under the mutex (watch()),
// so that completion takes the mutex, runs the callback and notifies. A step's handles are
// mostly complete before anyone looks at them: the engine completes each with one atomic
// operation instead of a lock, an unlock and a notification.
//
// Waiting ends a burst: a thread that blocks on a handle not yet complete tells the engine
// through `waiting` (WaitSignal) that its caller enqueues nothing more for now, so the engine
// negotiates at once instead of waiting out its burst window (engine.h). A lone blocking call
// thus never waits for more requests to fuse with. The waiting thread then helps: it runs the
// engine's rounds itself while they make progress toward its handle (Engine::help), so a step
// whose ranks are ready together completes without waking the background thread and without
// the waiter sleeping (two thread wake-ups saved, tens of microseconds each on a quiet core).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hora/mutex.h"
#include "hora/status.h"
#include "hora/thread_annotations.h"

namespace hora {
namespace detail {

struct HandleState;

// Told when a thread starts to wait on a handle that is not complete (engine::Engine).
class WaitSignal {
 public:
  // Called with the handle's mutex held, so the engine (which completes every handle before
  // it is destroyed) is alive; must not take that handle's mutex. Returns true when the
  // waiting thread may call help() once, after releasing the mutex: the implementation then
  // stays alive until help() returned.
  virtual bool waiting() = 0;
  // The waiting thread, without the handle's mutex, after waiting() returned true (exactly
  // once then): may drive the work behind `state` on this thread until it is done or no
  // longer progresses here. Returns with or without `state` done.
  virtual void help(const HandleState& state) = 0;

 protected:
  ~WaitSignal() = default;
};

// A tensor's name, held in the state's own block (which the engine's pool reuses,
// handle_pool.h) up to kInline bytes: a handle for a model's parameter name allocates nothing,
// where a std::string of one (past its 15 inline bytes) cost a heap allocation, a copy and a
// free per tensor, a tenth of the engine's instructions per tensor. Longer names go to the
// heap. The std::string that str() returns is made on the first call (Handle::name(), an
// error message), from any thread.
class HandleName {
 public:
  explicit HandleName(const std::string& name) : size_(name.size()) {
    if (size_ <= kInline) {
      std::memcpy(inline_, name.data(), size_);
    } else {
      string_ = name;
    }
  }
  HandleName(const HandleName&) = delete;
  HandleName& operator=(const HandleName&) = delete;
  const std::string& str() const {
    std::call_once(made_, [this] {
      if (size_ <= kInline) string_.assign(inline_, size_);
    });
    return string_;
  }

 private:
  static constexpr size_t kInline = 96;
  const size_t size_;
  char inline_[kInline];
  mutable std::once_flag made_;
  mutable std::string string_;  // the name once str() was called (or at once, when long)
};

// What the handle of a process set's collective carries (hora/process_set.h): its errors end
// with the set's label, and the last rank to join is told as a global rank (the set's engine
// counts set ranks: rank i of the set is ranks[i]).
struct SetContext {
  std::string label;  // " (process set 1: ranks 0, 2; its rank i is ranks[i])"
  std::vector<int> ranks;
};

struct HandleState {
  using Callback = std::function<void(const Status&)>;

  // `waiting` (may be null) is told when a thread waits on this state before it completed.
  HandleState(const std::string& name, int parts, double default_timeout_s,
              WaitSignal* waiting = nullptr)
      : parts_(parts),
        name_(name),
        remaining(parts),
        default_timeout_s(default_timeout_s),
        waiting(waiting) {}

  // A handle that is complete from the start (an enqueue that failed).
  static std::shared_ptr<HandleState> failed(const std::string& name, Status status) {
    auto state = std::make_shared<HandleState>(name, 1, 0.0);
    state->complete(std::move(status));
    return state;
  }

  // One part finished with `status`; the first error is kept. On the last part: runs the
  // callback (outside the mutex), then marks the state done and wakes the waiters.
  // A single-part state completing OK while unwatched needs no mutex (the file's comment);
  // otherwise, without a callback, one critical section does it all.
  void complete(const Status& status) HORA_EXCLUDES(mu) {
    if (parts_ == 1 && status.ok()) {
      // The status stays the OK it started as; the results written before this call are
      // published by the release.
      uint8_t seen = kPending;
      if (phase.compare_exchange_strong(seen, kDone, std::memory_order_release,
                                        std::memory_order_acquire))
        return;
      if (seen == kDone) return;
    }
    Callback run;
    Status final_status;
    {
      MutexLock lock(&mu);
      if (is_final || is_done()) return;
      if (!status.ok() && this->status.ok())
        this->status = set_context ? status.with_context(set_context->label) : status;
      if (--remaining > 0) return;
      is_final = true;
      if (!callback) {
        phase.store(kDone, std::memory_order_release);
        notify();
        return;
      }
      run = std::move(callback);
      callback = nullptr;
      final_status = this->status;
    }
    run(final_status);
    MutexLock lock(&mu);
    phase.store(kDone, std::memory_order_release);
    notify();
  }

  // True once done: a look without the mutex (a step waits on hundreds of handles that are
  // complete by then). After it, status no longer changes: read it with final_status().
  bool is_done() const { return phase.load(std::memory_order_acquire) == kDone; }
  // Before blocking on cv or registering a callback: makes completion take the mutex from now
  // on, and makes cv. Returns false when the state is done already (then nothing was changed).
  bool watch() HORA_REQUIRES(mu) {
    uint8_t seen = kPending;
    if (!phase.compare_exchange_strong(seen, kWatched, std::memory_order_acq_rel,
                                       std::memory_order_acquire) &&
        seen != kWatched)
      return false;
    if (!cv) cv.emplace();
    return true;
  }
  // Wakes the threads blocked on cv (there are none unless watch() made it).
  void notify() HORA_REQUIRES(mu) {
    if (cv) cv->notify_all();
  }
  // The final status; only after is_done() returned true.
  const Status& final_status() const HORA_NO_THREAD_SAFETY_ANALYSIS { return status; }

  // Registers `cb`, or runs it at once (on this thread, outside the mutex) when the final
  // status is already known. Replaces a callback that has not run yet.
  void on_complete(Callback cb) HORA_EXCLUDES(mu) {
    Status final_status;
    {
      MutexLock lock(&mu);
      if (!is_final && watch()) {
        callback = std::move(cb);
        return;
      }
      final_status = status;
    }
    if (cb) cb(final_status);
  }

  // The tensor's name (the group's key for a grouped allreduce).
  const std::string& name() const { return name_.str(); }

  // First, beside the shared_ptr's counts: what completion and is_done() read, so that they
  // touch one cache line of the state (a step's states are out of cache by then: its data
  // went through in between).
  // kDone: final and the callback ran; waiters may return. kWatched: completion takes mu.
  enum : uint8_t { kPending = 0, kWatched = 1, kDone = 2 };
  std::atomic<uint8_t> phase{kPending};
  const int parts_;
  const HandleName name_;
  mutable Mutex mu;  // guards the fields marked so; never held while a callback runs
  // Notified when phase becomes kDone (under mu once watched). Made by watch(): a step's
  // states are mostly complete before anyone looks at them, and destroying a condition
  // variable is an atomic read-modify-write (glibc), one per handle otherwise.
  std::optional<CondVar> cv HORA_GUARDED_BY(mu);
  int remaining HORA_GUARDED_BY(mu);
  bool is_final HORA_GUARDED_BY(mu) = false;  // the status will not change any more
  Status status HORA_GUARDED_BY(mu);
  Callback callback HORA_GUARDED_BY(mu);  // taken out (and run) once final
  const double default_timeout_s;
  WaitSignal* const waiting;
  // Results; written by the background thread before complete(), read after wait().
  std::vector<uint8_t> output;
  std::vector<int64_t> output_shape;
  std::vector<int64_t> received_splits;
  int join_result HORA_GUARDED_BY(mu) = -1;  // guarded by mu; set before the join's completion
  // A device collective's result on the GPU (core/engine/device_executor.h): makes a stream
  // (cudaStream_t) wait there for the result's last kernel, without the host waiting. Set by
  // the engine thread once that kernel was enqueued, before completion (cv is notified); null
  // for host tensors. Handle::wait_on_stream uses it.
  std::function<Status(void* stream)> stream_waiter HORA_GUARDED_BY(mu);
  // Set before the handle is handed out, for a collective of a process set other than the
  // global one; null otherwise.
  std::shared_ptr<const SetContext> set_context;
};

}  // namespace detail
}  // namespace hora
