// GlooStoreAdapter: presents a hora Store as gloo::rendezvous::Store, so gloo's
// connectFullMesh can exchange pair addresses through hora's rendezvous (TcpStore, FileStore,
// PrefixStore, MemoryStore).
//
// gloo's interface throws on failure, so this adapter throws gloo::IoException (with the hora
// Status text) when the hora store fails or times out; the communicator catches it at the
// boundary (gloo_errors.h). Every get/wait is bounded by the adapter's deadline (and by the
// timeout gloo passes, whichever comes first). The adapter borrows the store: the store must
// outlive it. Thread-safe when the store is.
#pragma once

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <string>
#include <vector>

#include "collectives/rendezvous/store.h"
#include "core/base/deadline.h"

namespace hora {
namespace collectives {
namespace gloo_backend {

class GlooStoreAdapter : public ::gloo::rendezvous::Store {
 public:
  GlooStoreAdapter(collectives::Store& store, Deadline deadline)
      : store_(store), deadline_(deadline) {}

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  Deadline bounded(std::chrono::milliseconds timeout) const;

  collectives::Store& store_;
  Deadline deadline_;
};

}  // namespace gloo_backend
}  // namespace collectives
}  // namespace hora
