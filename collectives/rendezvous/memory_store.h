// MemoryStore: an in-process Store (a map, one mutex, one condition variable). Used for
// single-process jobs and for tests that run ranks as threads. Thread-safe.
#pragma once

#include <map>

#include "collectives/rendezvous/store.h"
#include "hora/mutex.h"
#include "hora/thread_annotations.h"

namespace hora {
namespace collectives {

class MemoryStore : public Store {
 public:
  Status set(const std::string& key, const Bytes& value) override;
  StatusOr<Bytes> get(const std::string& key, Deadline deadline) override;
  StatusOr<int64_t> add(const std::string& key, int64_t delta) override;
  StatusOr<bool> check(const std::vector<std::string>& keys) override;
  Status wait(const std::vector<std::string>& keys, Deadline deadline) override;
  StatusOr<bool> remove(const std::string& key) override;

 private:
  Mutex mu_;
  CondVar changed_;  // data_ changed
  std::map<std::string, Bytes> data_ HORA_GUARDED_BY(mu_);
  // True when every key is in data_.
  bool has_all(const std::vector<std::string>& keys) const HORA_REQUIRES(mu_);
};

// Parses a Store counter value (decimal text, as add() stores it). Shared by the stores.
StatusOr<int64_t> parse_counter(const std::string& key, const Bytes& value);
Bytes format_counter(int64_t value);
// "'a', 'b'".
std::string join_keys(const std::vector<std::string>& keys);

}  // namespace collectives
}  // namespace hora
