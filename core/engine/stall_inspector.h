// StallInspector: notices tensors that some ranks submitted and others did not.
//
// The coordinator feeds it, every round, the names it holds that are not yet ready on every
// rank, with the ranks that submitted each. When one has waited HORA_STALL_WARNING_S, it logs
// one warning (at most one per warning period) naming the first few stalled tensors and, per
// tensor, the ready and the missing ranks. With HORA_STALL_SHUTDOWN_S > 0 a stall that long
// becomes an error message that the engine delivers to every rank. Background thread only.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace hora {
namespace engine {

struct StalledTensor {
  std::string name;
  std::vector<int> ready_ranks;  // ascending
  std::chrono::steady_clock::time_point first_seen;
};

class StallInspector {
 public:
  StallInspector(double warning_s, double shutdown_s, int size)
      : warning_s_(warning_s), shutdown_s_(shutdown_s), size_(size) {}

  // Returns "" or the fatal stall message. Logs the warning itself.
  std::string check(const std::vector<StalledTensor>& pending,
                    std::chrono::steady_clock::time_point now);

  // "'fc1.weight' (ready: 0,2; missing: 1)" for the first `max_tensors` entries, then
  // "and N more". Exposed for tests.
  static std::string describe(const std::vector<StalledTensor>& stalled, int size,
                              size_t max_tensors);

  int64_t warnings() const { return warnings_; }

 private:
  const double warning_s_;
  const double shutdown_s_;
  const int size_;
  std::chrono::steady_clock::time_point last_warning_{};
  int64_t warnings_ = 0;
};

}  // namespace engine
}  // namespace hora
