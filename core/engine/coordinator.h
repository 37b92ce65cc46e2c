// Coordinator: rank 0's table of requests not yet agreed, and the decisions made from it.
//
// Each round, every rank's new (uncached) requests are ingested in rank order. A name is
// ready when every rank submitted it, counting ranks that have joined (they contribute
// zeros). A ready name becomes one Response: OK, or an error naming the mismatching field and
// ranks (message.h validate_requests), or an error because joined ranks cannot take part in
// it. The members of a grouped allreduce are released together, in their submission order.
// Join requests are counted separately: when every rank joined, one join Response carries the
// last rank to join. Background thread of rank 0 only.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/engine/message.h"
#include "core/engine/stall_inspector.h"

namespace hora {
namespace engine {

class Coordinator {
 public:
  explicit Coordinator(int size) : size_(size), joined_(size, false) {}

  void ingest(int rank, const std::vector<Request>& requests,
              std::chrono::steady_clock::time_point now);
  // The responses now decided, in first-arrival order of their names.
  std::vector<Response> collect();
  // Names still waiting for some rank, for the stall inspector.
  std::vector<StalledTensor> pending() const;

  size_t table_size() const { return table_.size(); }

 private:
  struct Pending {
    std::vector<Request> requests;  // indexed by rank; present[r] says which are set
    std::vector<bool> present;
    int count = 0;
    uint64_t seq = 0;
    std::chrono::steady_clock::time_point first_seen;
  };
  bool ready(const Pending& p) const;
  Response decide(const Pending& p) const;

  const int size_;
  std::unordered_map<std::string, Pending> table_;
  uint64_t next_seq_ = 0;
  std::vector<bool> joined_;
  int joined_count_ = 0;
  int last_joined_ = -1;
  std::chrono::steady_clock::time_point last_joined_at_;  // when last_joined_ called join
};

}  // namespace engine
}  // namespace hora
