#include "core/engine/handle_pool.h"

#include <cstddef>
#include <new>
#include <utility>
#include <vector>

namespace hora {
namespace engine {
namespace {

constexpr size_t kMaxKept = 1024;

// Set once this thread's pool was destroyed (thread exit): blocks then go straight to the heap.
// Trivially destructible, so it can still be read after the pool is gone.
thread_local bool t_pool_gone = false;

// Free blocks of this thread, all of one size: only make_handle_state's control block type is
// allocated through PoolAllocator.
struct Pool {
  Pool() { blocks.reserve(kMaxKept); }
  ~Pool() {
    for (void* b : blocks) ::operator delete(b);
    t_pool_gone = true;
  }
  std::vector<void*> blocks;
};

Pool* pool() {
  if (t_pool_gone) return nullptr;
  thread_local Pool p;
  return &p;
}

template <typename T>
struct PoolAllocator {
  using value_type = T;
  PoolAllocator() = default;
  template <typename U>
  PoolAllocator(const PoolAllocator<U>&) {}  // NOLINT(google-explicit-constructor): rebinding

  T* allocate(size_t n) {
    Pool* p = n == 1 ? pool() : nullptr;
    if (p != nullptr && !p->blocks.empty()) {
      void* b = p->blocks.back();
      p->blocks.pop_back();
      return static_cast<T*>(b);
    }
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* ptr, size_t n) {
    Pool* p = n == 1 ? pool() : nullptr;
    if (p != nullptr && p->blocks.size() < kMaxKept) {
      p->blocks.push_back(ptr);
      return;
    }
    ::operator delete(ptr);
  }
  template <typename U>
  bool operator==(const PoolAllocator<U>&) const {
    return true;
  }
  template <typename U>
  bool operator!=(const PoolAllocator<U>&) const {
    return false;
  }
};

}  // namespace

std::shared_ptr<detail::HandleState> make_handle_state(const std::string& name, int parts,
                                                       double default_timeout_s,
                                                       detail::WaitSignal* waiting) {
  return std::allocate_shared<detail::HandleState>(PoolAllocator<detail::HandleState>(), name,
                                                   parts, default_timeout_s, waiting);
}

}  // namespace engine
}  // namespace hora
