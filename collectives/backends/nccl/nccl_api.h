// NcclApi: every NCCL, CUDA runtime and CUDA kernel call the NCCL backend makes, behind one small
// interface, so that tests can drive the communicator's waiting, abort and error paths with a
// fake on a machine without a GPU (tests/collectives/backends/nccl/fake_nccl_api.h).
// real_nccl_api() forwards to the libraries; it and the CUDA kernels are the only code in
// hora that calls them. Results are the libraries' own (ncclResult_t; cudaError_t as int):
// nccl_status.h turns them into Status.
//
// Thread-safety: the real API is as thread-safe as NCCL and CUDA are (a communicator is used
// by one thread at a time); fakes document their own.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>

#include "hora/data_type.h"
#include "hora/reduce_op.h"
#include "hora/status.h"

namespace hora {
namespace collectives {
namespace nccl_backend {

// Where a pointer's memory lives, as cudaPointerGetAttributes says.
enum class MemoryKind { kHost, kDevice, kManaged };

class NcclApi {
 public:
  virtual ~NcclApi() = default;

  // --- NCCL ---
  virtual ncclResult_t get_version(int* version) = 0;
  virtual ncclResult_t get_unique_id(ncclUniqueId* id) = 0;
  virtual ncclResult_t comm_init_rank_config(ncclComm_t* comm, int nranks, ncclUniqueId id,
                                             int rank, ncclConfig_t* config) = 0;
  virtual ncclResult_t comm_get_async_error(ncclComm_t comm, ncclResult_t* error) = 0;
  virtual ncclResult_t comm_finalize(ncclComm_t comm) = 0;
  virtual ncclResult_t comm_destroy(ncclComm_t comm) = 0;
  virtual ncclResult_t comm_abort(ncclComm_t comm) = 0;
  virtual const char* get_error_string(ncclResult_t result) = 0;
  // NCCL's description of the last error on `comm` (may be empty).
  virtual const char* get_last_error(ncclComm_t comm) = 0;

  virtual ncclResult_t group_start() = 0;
  virtual ncclResult_t group_end() = 0;
  virtual ncclResult_t send(const void* data, size_t count, ncclDataType_t type, int peer,
                            ncclComm_t comm, cudaStream_t stream) = 0;
  virtual ncclResult_t recv(void* data, size_t count, ncclDataType_t type, int peer,
                            ncclComm_t comm, cudaStream_t stream) = 0;
  virtual ncclResult_t all_reduce(const void* in, void* out, size_t count, ncclDataType_t type,
                                  ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) = 0;
  virtual ncclResult_t broadcast(const void* in, void* out, size_t count, ncclDataType_t type,
                                 int root, ncclComm_t comm, cudaStream_t stream) = 0;
  virtual ncclResult_t reduce(const void* in, void* out, size_t count, ncclDataType_t type,
                              ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) = 0;
  virtual ncclResult_t all_gather(const void* in, void* out, size_t send_count, ncclDataType_t type,
                                  ncclComm_t comm, cudaStream_t stream) = 0;
  virtual ncclResult_t reduce_scatter(const void* in, void* out, size_t recv_count,
                                      ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
                                      cudaStream_t stream) = 0;

  // --- CUDA runtime (cudaError_t values as int) ---
  virtual int get_device_count(int* count) = 0;
  virtual int set_device(int device) = 0;
  virtual int stream_create(cudaStream_t* stream) = 0;  // non-blocking w.r.t. stream 0
  virtual int stream_destroy(cudaStream_t stream) = 0;
  virtual int event_create(cudaEvent_t* event) = 0;  // timing disabled
  virtual int event_destroy(cudaEvent_t event) = 0;
  virtual int event_record(cudaEvent_t event, cudaStream_t stream) = 0;
  // cudaSuccess when everything recorded before it has run, cudaErrorNotReady while not.
  virtual int event_query(cudaEvent_t event) = 0;
  virtual int malloc_device(void** ptr, size_t bytes) = 0;
  virtual int free_device(void* ptr) = 0;
  virtual int memcpy_async(void* dst, const void* src, size_t bytes, cudaStream_t stream) = 0;
  // Where `ptr` lives and, for device memory, on which device.
  virtual int pointer_kind(const void* ptr, MemoryKind* kind, int* device) = 0;

  // --- hora's CUDA kernels (kernels/cuda/cuda_kernels.h), enqueued on `stream` ---
  // buf[i] *= factor (kAverage's 1/size).
  virtual Status scale(void* buf, size_t count, DataType dtype, double factor,
                       cudaStream_t stream) = 0;
  // dst[i] = a[i] op b[i] (hora's algorithms over NCCL).
  virtual Status reduce3(void* dst, const void* a, const void* b, size_t count, DataType dtype,
                         ReduceOp op, cudaStream_t stream) = 0;
};

// The libraries themselves. A process-wide object without state; never destroyed.
NcclApi& real_nccl_api();

}  // namespace nccl_backend
}  // namespace collectives
}  // namespace hora
