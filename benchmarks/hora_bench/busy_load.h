// BusyLoad: compute threads that keep the CPU busy beside the sweep (hora-bench --load N), as
// BLAS and data loading keep a training process's cores busy. Each thread runs a dependent
// floating-point loop with no memory traffic and no system calls until the BusyLoad is
// destroyed, so it competes for cores with hora's waits and nothing else. The threads take the
// process's affinity (they run where the rank may run).
//
// Owned by one thread (main); construction starts the threads, destruction stops and joins
// them (within a few microseconds: they poll a flag every 4096 iterations).
#pragma once

#include <atomic>
#include <thread>
#include <vector>

namespace hora {
namespace bench {

class BusyLoad {
 public:
  // Starts `threads` busy threads (none for 0).
  explicit BusyLoad(int threads);
  ~BusyLoad();
  BusyLoad(const BusyLoad&) = delete;
  BusyLoad& operator=(const BusyLoad&) = delete;

  int threads() const { return static_cast<int>(threads_.size()); }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace bench
}  // namespace hora
