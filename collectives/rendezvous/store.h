// Store: the key-value rendezvous through which the ranks of a job find each other
// (addresses, unique ids, readiness counters). Implemented by TcpStoreClient (a server that
// one process hosts), FileStore (a shared directory) and PrefixStore (a key scope over another
// store); gloo_store_adapter adapts any Store to gloo::rendezvous::Store.
//
// Thread-safety: every implementation is safe to call from several threads at once.
// Every blocking call takes a Deadline and fails with kTimeout naming the keys it waited for.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/deadline.h"
#include "hora/status.h"

namespace hora {
namespace collectives {

using Bytes = std::vector<uint8_t>;

class Store {
 public:
  virtual ~Store() = default;

  // Sets `key` to `value`, replacing any previous value. Wakes waiters on the key.
  virtual Status set(const std::string& key, const Bytes& value) = 0;
  // Waits until `key` exists, then returns its value. kTimeout (naming the key) at `deadline`.
  virtual StatusOr<Bytes> get(const std::string& key, Deadline deadline) = 0;
  // Atomically adds `delta` to the integer at `key` (a missing key counts as 0) and returns
  // the new value. Does not block beyond one round trip.
  virtual StatusOr<int64_t> add(const std::string& key, int64_t delta) = 0;
  // True when every key in `keys` exists now. Never blocks beyond one round trip.
  virtual StatusOr<bool> check(const std::vector<std::string>& keys) = 0;
  // Waits until every key in `keys` exists. kTimeout names the keys still missing.
  virtual Status wait(const std::vector<std::string>& keys, Deadline deadline) = 0;
  // Deletes `key`; true when it existed.
  virtual StatusOr<bool> remove(const std::string& key) = 0;

  // set() and check() that fail with kTimeout at `deadline` even when the store's host
  // stopped answering (a SIGSTOPped or hung host process): for a rank reporting a failure,
  // whose store may live in the rank that failed. A TcpStoreClient whose call timed out is
  // broken afterwards (a late answer would be taken for the next one). The defaults call the
  // plain forms (stores that answer locally).
  virtual Status set_until(const std::string& key, const Bytes& value, Deadline deadline) {
    (void)deadline;
    return set(key, value);
  }
  virtual StatusOr<bool> check_until(const std::vector<std::string>& keys, Deadline deadline) {
    (void)deadline;
    return check(keys);
  }
};

}  // namespace collectives
}  // namespace hora
