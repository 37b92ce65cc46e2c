#include "core/base/thread_leases.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "hora/mutex.h"
#include "hora/thread_annotations.h"

namespace hora {
namespace thread_leases {
namespace {

// One thread's leases, written by that thread only (no read-modify-write) and read by
// drain(): the low half the leases held (nested), the high half how many times the thread
// went from holding to not holding one. drain() waits, per thread, for the lease held when it
// looked to be returned (the high half moves), not for a moment without any: a thread that
// leases again at once would hold one at nearly every look.
struct Slot {
  std::atomic<uint64_t> word{0};
};
constexpr uint64_t kHeldMask = 0xffffffffu;
constexpr uint64_t kReturned = uint64_t{1} << 32;

// The registered slots, and the fence mode decided with the first registration.
struct Registry {
  Mutex mu;
  std::vector<Slot*> slots HORA_GUARDED_BY(mu);
  bool decided HORA_GUARDED_BY(mu) = false;
  bool force_full HORA_GUARDED_BY(mu) = false;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: threads may exit after main
  return *r;
}

// Read by enter() without the registry's mutex: written once, before the first registration
// completes, and every thread registers (under the mutex) before its first read.
std::atomic<bool> g_asymmetric{false};

long membarrier(int cmd) { return syscall(SYS_membarrier, cmd, 0, 0); }

// Whether this process may use MEMBARRIER_CMD_PRIVATE_EXPEDITED (then registered for it).
bool register_membarrier() {
  const long supported = membarrier(MEMBARRIER_CMD_QUERY);
  if (supported < 0 || (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
  return membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

// This thread's slot once made (ThreadSlot): the one a forked child keeps.
thread_local Slot* t_slot = nullptr;

// fork(): the child has only the thread that forked, so it keeps only that thread's slot
// (another thread's word may read held forever there). It registers for membarrier again:
// the kernel keeps the registration across fork (thread_leases_test passes without this), so
// this only guards a kernel that would not, by falling back to full fences (the child has one
// thread then: no lease in flight). The registry's mutex is held across the fork, so the
// child finds the registry whole.
void before_fork() HORA_NO_THREAD_SAFETY_ANALYSIS { registry().mu.lock(); }
void after_fork_in_parent() HORA_NO_THREAD_SAFETY_ANALYSIS { registry().mu.unlock(); }
void after_fork_in_child() HORA_NO_THREAD_SAFETY_ANALYSIS {
  Registry& r = registry();
  r.slots.clear();
  if (t_slot != nullptr) r.slots.push_back(t_slot);
  if (g_asymmetric.load(std::memory_order_relaxed) && !register_membarrier())
    g_asymmetric.store(false, std::memory_order_relaxed);
  r.mu.unlock();
}

void decide(Registry& r) HORA_REQUIRES(r.mu) {
  if (r.decided) return;
  r.decided = true;
  g_asymmetric.store(!r.force_full && register_membarrier(), std::memory_order_relaxed);
  pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
}

// This thread's slot, registered while the thread lives.
class ThreadSlot {
 public:
  ThreadSlot() {
    Registry& r = registry();
    MutexLock lock(&r.mu);
    decide(r);
    r.slots.push_back(&slot_);
    t_slot = &slot_;
  }
  ~ThreadSlot() {
    Registry& r = registry();
    MutexLock lock(&r.mu);
    t_slot = nullptr;
    const auto it = std::find(r.slots.begin(), r.slots.end(), &slot_);
    if (it != r.slots.end()) r.slots.erase(it);  // (a forked child dropped it)
  }
  ThreadSlot(const ThreadSlot&) = delete;
  ThreadSlot& operator=(const ThreadSlot&) = delete;
  Slot& slot() { return slot_; }

 private:
  Slot slot_;
};

Slot& this_thread_slot() {
  thread_local ThreadSlot t;
  return t.slot();
}

}  // namespace

void enter() {
  Slot& s = this_thread_slot();
  const uint64_t w = s.word.load(std::memory_order_relaxed) + 1;
  if (g_asymmetric.load(std::memory_order_relaxed)) {
    // drain()'s membarrier orders this store before the caller's read of the pointer.
    s.word.store(w, std::memory_order_relaxed);
    std::atomic_signal_fence(std::memory_order_seq_cst);
  } else {
    s.word.exchange(w, std::memory_order_seq_cst);  // a full fence
  }
}

void leave() {
  Slot& s = this_thread_slot();
  const uint64_t w = s.word.load(std::memory_order_relaxed) - 1;
  s.word.store((w & kHeldMask) == 0 ? w + kReturned : w, std::memory_order_release);
}

Status drain(std::chrono::steady_clock::time_point until) {
  Registry& r = registry();
  MutexLock lock(&r.mu);
  decide(r);
  // Every running thread passes a full barrier: a lease whose store this thread would not see
  // below was taken after the barrier, and its read of the pointer then sees it cleared.
  if (g_asymmetric.load(std::memory_order_relaxed) &&
      membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0)
    return Status::internal(std::string("membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) failed: ") +
                            std::strerror(errno));
  for (const Slot* s : r.slots) {
    const uint64_t seen = s->word.load(std::memory_order_seq_cst);
    if ((seen & kHeldMask) == 0) continue;
    while ((s->word.load(std::memory_order_acquire) & ~kHeldMask) == (seen & ~kHeldMask)) {
      if (std::chrono::steady_clock::now() >= until)
        return Status::timeout("a thread still holds a lease taken before the drain began");
      std::this_thread::yield();
    }
  }
  return Status::OK();
}

bool asymmetric() {
  Registry& r = registry();
  MutexLock lock(&r.mu);
  decide(r);
  return g_asymmetric.load(std::memory_order_relaxed);
}

bool force_full_fence_for_testing() {
  Registry& r = registry();
  MutexLock lock(&r.mu);
  if (r.decided) return false;
  r.force_full = true;
  decide(r);
  return true;
}

}  // namespace thread_leases
}  // namespace hora
