// FileStore: a Store in a shared directory, for clusters whose nodes share a filesystem.
//
// Each key is one file, its name the key hex-encoded (any key is a safe file name). set()
// writes a temporary file and renames it into place, so a reader sees the old value or the
// new one, never half. add() serialises through flock() on one lock file per key. A
// filesystem gives no notification that works over NFS, so get()/wait() poll with a backoff
// (1 ms doubling to 50 ms) up to the caller's deadline. Thread- and process-safe.
#pragma once

#include <string>

#include "collectives/rendezvous/store.h"

namespace hora {
namespace collectives {

class FileStore : public Store {
 public:
  // Creates `directory` if missing. Fails (kIo) when it cannot be created or written.
  static StatusOr<std::unique_ptr<FileStore>> open(const std::string& directory);

  Status set(const std::string& key, const Bytes& value) override;
  StatusOr<Bytes> get(const std::string& key, Deadline deadline) override;
  StatusOr<int64_t> add(const std::string& key, int64_t delta) override;
  StatusOr<bool> check(const std::vector<std::string>& keys) override;
  Status wait(const std::vector<std::string>& keys, Deadline deadline) override;
  StatusOr<bool> remove(const std::string& key) override;

 private:
  explicit FileStore(std::string directory) : directory_(std::move(directory)) {}
  std::string path_of(const std::string& key) const;
  // Reads the key's file; nullopt-like kFailedPrecondition code when absent.
  StatusOr<Bytes> read(const std::string& key) const;

  std::string directory_;
};

}  // namespace collectives
}  // namespace hora
