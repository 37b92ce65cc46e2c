#include "collectives/backends/nccl/nccl_unique_id.h"

#include <cstring>

#include "collectives/backends/nccl/nccl_status.h"

namespace hora {
namespace collectives {
namespace nccl_backend {

StatusOr<ncclUniqueId> exchange_unique_id(NcclApi& api, Store& store, int rank, int size,
                                          Deadline deadline) {
  const std::string who = "nccl: rank " + std::to_string(rank) + " of " + std::to_string(size);
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (rank == 0) {
    HORA_RETURN_IF_ERROR(nccl_status(api.get_unique_id(&id), who + ": ncclGetUniqueId"));
    const auto* bytes = reinterpret_cast<const uint8_t*>(id.internal);
    HORA_RETURN_IF_ERROR(store.set(kUniqueIdKey, Bytes(bytes, bytes + sizeof id.internal)));
    return id;
  }
  StatusOr<Bytes> value = store.get(kUniqueIdKey, deadline);
  if (!value.ok())
    return value.status().with_context(" (" + who + " waiting for rank 0's NCCL unique id)");
  if (value->size() != sizeof id.internal)
    return Status::mismatch(who + ": the NCCL unique id in the store has " +
                            std::to_string(value->size()) + " bytes; expected " +
                            std::to_string(sizeof id.internal) + " (NCCL_UNIQUE_ID_BYTES)");
  std::memcpy(id.internal, value->data(), sizeof id.internal);
  return id;
}

}  // namespace nccl_backend
}  // namespace collectives
}  // namespace hora
