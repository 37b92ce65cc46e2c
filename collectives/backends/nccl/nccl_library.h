// NcclLibrary: NCCL's entry points, loaded with dlopen("libnccl.so.2") the first time the
// NCCL backend is used, never at program start.
//
// Why not link libnccl: frameworks bring their own NCCL (PyTorch's wheel ships one, newer than
// the CUDA toolkit's). Were hora's Python module linked against the toolkit's libnccl.so.2, it
// would be loaded first on `import hora` and PyTorch's libtorch_cuda would then bind to it by
// its soname and fail on the symbols only its own NCCL has. Loaded lazily, hora uses whatever
// libnccl.so.2 the process already has (the framework's), or the system's when none.
//
// Thread-safe: loading happens once (std::call_once); the table is immutable afterwards.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

namespace hora {
namespace collectives {
namespace nccl_backend {

struct NcclLibrary {
  ncclResult_t (*get_version)(int*);
  ncclResult_t (*get_unique_id)(ncclUniqueId*);
  ncclResult_t (*comm_init_rank_config)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*);
  ncclResult_t (*comm_get_async_error)(ncclComm_t, ncclResult_t*);
  ncclResult_t (*comm_finalize)(ncclComm_t);
  ncclResult_t (*comm_destroy)(ncclComm_t);
  ncclResult_t (*comm_abort)(ncclComm_t);
  const char* (*get_error_string)(ncclResult_t);
  const char* (*get_last_error)(ncclComm_t);
  ncclResult_t (*group_start)();
  ncclResult_t (*group_end)();
  ncclResult_t (*send)(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*recv)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*all_reduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                             cudaStream_t);
  ncclResult_t (*broadcast)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,
                            cudaStream_t);
  ncclResult_t (*reduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t,
                         cudaStream_t);
  ncclResult_t (*all_gather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*reduce_scatter)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t,
                                 ncclComm_t, cudaStream_t);
};

// The loaded table, or nullptr when libnccl.so.2 cannot be loaded or lacks a symbol (then
// load_error() says which and why).
const NcclLibrary* nccl_library();
const std::string& nccl_load_error();

}  // namespace nccl_backend
}  // namespace collectives
}  // namespace hora
