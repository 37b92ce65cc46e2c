// ThreadStore: a minimal in-process Store for the gloo backend's threaded tests (N threads of
// one process, one rank each). One mutex and one condition variable; every wait honours its
// Deadline. Test-only; the library's MemoryStore serves the same role for single-process init.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "collectives/rendezvous/store.h"

namespace hora {
namespace test_support {

class ThreadStore : public collectives::Store {
 public:
  Status set(const std::string& key, const collectives::Bytes& value) override {
    std::lock_guard<std::mutex> lock(mu_);
    values_[key] = value;
    cv_.notify_all();
    return Status::ok();
  }
  StatusOr<collectives::Bytes> get(const std::string& key, Deadline deadline) override {
    HORA_RETURN_IF_ERROR(wait({key}, deadline));
    std::lock_guard<std::mutex> lock(mu_);
    return values_[key];
  }
  StatusOr<int64_t> add(const std::string& key, int64_t delta) override {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t v = counters_[key] += delta;
    std::string text = std::to_string(v);
    values_[key] = collectives::Bytes(text.begin(), text.end());
    cv_.notify_all();
    return v;
  }
  StatusOr<bool> check(const std::vector<std::string>& keys) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& k : keys)
      if (!values_.count(k)) return false;
    return true;
  }
  Status wait(const std::vector<std::string>& keys, Deadline deadline) override {
    std::unique_lock<std::mutex> lock(mu_);
    auto all_there = [&] {
      for (const auto& k : keys)
        if (!values_.count(k)) return false;
      return true;
    };
    if (!cv_.wait_until(lock, deadline.at(), all_there)) {
      std::string missing;
      for (const auto& k : keys)
        if (!values_.count(k)) missing += (missing.empty() ? "" : ", ") + k;
      return Status::timeout("ThreadStore: timed out waiting for keys " + missing);
    }
    return Status::ok();
  }
  StatusOr<bool> remove(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    counters_.erase(key);
    return values_.erase(key) > 0;
  }

 private:
  std::mutex mu_;  // guards values_, counters_
  std::condition_variable cv_;
  std::map<std::string, collectives::Bytes> values_;
  std::map<std::string, int64_t> counters_;
};

}  // namespace test_support
}  // namespace hora
