#include "benchmarks/hora_bench/busy_load.h"

namespace hora {
namespace bench {
namespace {

// Keeps one core busy until *stop; the result is written to a volatile so the loop stays.
void spin(const std::atomic<bool>* stop) {
  double x = 1.0;
  volatile double sink = 0;
  while (!stop->load(std::memory_order_relaxed)) {
    for (int i = 0; i < 4096; ++i) x = x * 1.0000001 + 1e-9;
    sink = x;
  }
  (void)sink;
}

}  // namespace

BusyLoad::BusyLoad(int threads) {
  for (int t = 0; t < threads; ++t) threads_.emplace_back(spin, &stop_);
}

BusyLoad::~BusyLoad() {
  stop_.store(true, std::memory_order_relaxed);
  for (std::thread& t : threads_) t.join();
}

}  // namespace bench
}  // namespace hora
