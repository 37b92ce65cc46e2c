// The NCCL unique id's trip through hora's rendezvous Store: rank 0 asks NCCL for a fresh id
// and sets it under a key; every other rank waits for the key. The Store is whatever the
// caller passes (the registry gives each communicator its own PrefixStore), so two
// communicators never read each other's id. Thread-safe as the Store is.
#pragma once

#include <nccl.h>

#include <string>

#include "collectives/backends/nccl/nccl_api.h"
#include "collectives/rendezvous/store.h"
#include "core/base/deadline.h"
#include "hora/status.h"

namespace hora {
namespace collectives {
namespace nccl_backend {

// The key the id lives under in the communicator's store.
inline constexpr const char* kUniqueIdKey = "nccl/unique_id";

// Rank 0: ncclGetUniqueId, then store.set(kUniqueIdKey). Other ranks: store.get until
// `deadline` (kTimeout naming the key and rank 0). A value that is not exactly
// NCCL_UNIQUE_ID_BYTES long is kMismatch naming both sizes (another program, or another NCCL
// version, wrote it). Blocks at most until `deadline`.
StatusOr<ncclUniqueId> exchange_unique_id(NcclApi& api, Store& store, int rank, int size,
                                          Deadline deadline);

}  // namespace nccl_backend
}  // namespace collectives
}  // namespace hora
