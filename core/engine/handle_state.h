// HandleState: what a Handle (core/hora.h) points at. The engine's background thread
// completes it; any thread waits on it. A grouped allreduce shares one state among its
// members: it completes when the last member did, with the first error seen.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/base/status.h"

namespace hora {
namespace detail {

struct HandleState {
  HandleState(std::string name, int parts, double default_timeout_s)
      : name(std::move(name)), remaining(parts), default_timeout_s(default_timeout_s) {}

  // A handle that is complete from the start (an enqueue that failed).
  static std::shared_ptr<HandleState> failed(std::string name, Status status) {
    auto state = std::make_shared<HandleState>(std::move(name), 1, 0.0);
    state->complete(std::move(status));
    return state;
  }

  // One part finished with `status`; the first error is kept. Wakes waiters on the last part.
  void complete(Status status) {
    std::lock_guard<std::mutex> lock(mu);
    if (done) return;
    if (!status.is_ok() && this->status.is_ok()) this->status = std::move(status);
    if (--remaining <= 0) {
      done = true;
      cv.notify_all();
    }
  }

  const std::string name;
  mutable std::mutex mu;
  std::condition_variable cv;
  int remaining;            // guarded by mu
  bool done = false;        // guarded by mu
  Status status;            // guarded by mu
  const double default_timeout_s;
  // Results; written by the background thread before complete(), read after wait().
  std::vector<uint8_t> output;
  std::vector<int64_t> output_shape;
  std::vector<int64_t> received_splits;
  int join_result = -1;
};

}  // namespace detail
}  // namespace hora
