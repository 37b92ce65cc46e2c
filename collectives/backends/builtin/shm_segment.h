// ShmSegment: one POSIX shared-memory segment (shm_open + posix_fallocate + mmap), created by
// one rank of a host and mapped by the others, pre-faulted so that no page fault lands on the
// hot path (madvise(MADV_HUGEPAGE) where the kernel allows it, then every page touched).
//
// Nothing is left behind: establish_shm_segment() unlinks the name as soon as every local
// rank has mapped it, before it returns, so even kill -9 of every rank afterwards leaves
// nothing in /dev/shm; the memory lives only as long as some mapping does.
//
// Threads: the object is immutable after creation; the memory is shared by design.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "collectives/rendezvous/store.h"
#include "core/base/deadline.h"
#include "hora/status.h"

namespace hora {
namespace collectives {
namespace builtin {

// Every hora segment name starts with this ("/dev/shm/hora-...").
inline constexpr const char* kShmNamePrefix = "/hora-";

class ShmSegment {
 public:
  // Creates a new segment of `bytes` under `name` (which must start with '/'), zero-filled and
  // pre-faulted. kIo names the segment and the errno (e.g. /dev/shm full).
  static StatusOr<std::unique_ptr<ShmSegment>> create(const std::string& name, size_t bytes);
  // Maps an existing segment, checking it has `bytes`; pre-faults the mapping (MAP_POPULATE).
  static StatusOr<std::unique_ptr<ShmSegment>> open(const std::string& name, size_t bytes);
  // Removes the name (idempotent; the mapping stays valid).
  static void unlink(const std::string& name);

  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }

 private:
  ShmSegment(std::string name, void* data, size_t size)
      : name_(std::move(name)), data_(data), size_(size) {}
  std::string name_;
  void* data_;
  size_t size_;
};

// Creates (when `creator`) or opens the segment of one group of local ranks, exchanging its
// name through `store` under `key_prefix`, and unlinks it once all `local_size` ranks have
// mapped it. `init` runs on the creator's zeroed memory before the name is published.
// Every rank returns only after the name is unlinked. Errors name the key or segment; when
// the creator cannot create the segment (a full /dev/shm), it publishes its error instead of
// a name, so the other local ranks fail at once with it (kRemote) instead of at `deadline`.
StatusOr<std::unique_ptr<ShmSegment>> establish_shm_segment(
    Store& store, const std::string& key_prefix, bool creator, int local_size, size_t bytes,
    void (*init)(void* memory, size_t bytes, void* arg), void* init_arg, Deadline deadline);

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
