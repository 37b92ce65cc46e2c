// real_nccl_api(): NcclApi forwarding to NCCL and the CUDA runtime.
#include "collectives/backends/nccl/nccl_api.h"

#include "collectives/backends/nccl/nccl_library.h"
#include "kernels/cuda/cuda_kernels.h"

namespace hora {
namespace collectives {
namespace nccl_backend {
namespace {

// NCCL calls go through the lazily loaded library (nccl_library.h); when it cannot be loaded
// every call fails with ncclSystemError and get_error_string says why.
const NcclLibrary* lib() { return nccl_library(); }

#define HORA_NCCL_CALL(fn, ...) (lib() ? lib()->fn(__VA_ARGS__) : ncclSystemError)

class RealNcclApi final : public NcclApi {
 public:
  ncclResult_t get_version(int* version) override { return HORA_NCCL_CALL(get_version, version); }
  ncclResult_t get_unique_id(ncclUniqueId* id) override {
    return HORA_NCCL_CALL(get_unique_id, id);
  }
  ncclResult_t comm_init_rank_config(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                     ncclConfig_t* config) override {
    return HORA_NCCL_CALL(comm_init_rank_config, comm, nranks, id, rank, config);
  }
  ncclResult_t comm_get_async_error(ncclComm_t comm, ncclResult_t* error) override {
    return HORA_NCCL_CALL(comm_get_async_error, comm, error);
  }
  ncclResult_t comm_finalize(ncclComm_t comm) override {
    return HORA_NCCL_CALL(comm_finalize, comm);
  }
  ncclResult_t comm_destroy(ncclComm_t comm) override { return HORA_NCCL_CALL(comm_destroy, comm); }
  ncclResult_t comm_abort(ncclComm_t comm) override { return HORA_NCCL_CALL(comm_abort, comm); }
  const char* get_error_string(ncclResult_t result) override {
    return lib() ? lib()->get_error_string(result) : nccl_load_error().c_str();
  }
  const char* get_last_error(ncclComm_t comm) override {
    return lib() ? lib()->get_last_error(comm) : nccl_load_error().c_str();
  }

  ncclResult_t group_start() override { return HORA_NCCL_CALL(group_start); }
  ncclResult_t group_end() override { return HORA_NCCL_CALL(group_end); }
  ncclResult_t send(const void* data, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                    cudaStream_t stream) override {
    return HORA_NCCL_CALL(send, data, count, type, peer, comm, stream);
  }
  ncclResult_t recv(void* data, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                    cudaStream_t stream) override {
    return HORA_NCCL_CALL(recv, data, count, type, peer, comm, stream);
  }
  ncclResult_t all_reduce(const void* in, void* out, size_t count, ncclDataType_t type,
                          ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) override {
    return HORA_NCCL_CALL(all_reduce, in, out, count, type, op, comm, stream);
  }
  ncclResult_t broadcast(const void* in, void* out, size_t count, ncclDataType_t type, int root,
                         ncclComm_t comm, cudaStream_t stream) override {
    return HORA_NCCL_CALL(broadcast, in, out, count, type, root, comm, stream);
  }
  ncclResult_t reduce(const void* in, void* out, size_t count, ncclDataType_t type, ncclRedOp_t op,
                      int root, ncclComm_t comm, cudaStream_t stream) override {
    return HORA_NCCL_CALL(reduce, in, out, count, type, op, root, comm, stream);
  }
  ncclResult_t all_gather(const void* in, void* out, size_t send_count, ncclDataType_t type,
                          ncclComm_t comm, cudaStream_t stream) override {
    return HORA_NCCL_CALL(all_gather, in, out, send_count, type, comm, stream);
  }
  ncclResult_t reduce_scatter(const void* in, void* out, size_t recv_count, ncclDataType_t type,
                              ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) override {
    return HORA_NCCL_CALL(reduce_scatter, in, out, recv_count, type, op, comm, stream);
  }

  int get_device_count(int* count) override { return cudaGetDeviceCount(count); }
  int set_device(int device) override { return cudaSetDevice(device); }
  int stream_create(cudaStream_t* stream) override {
    return cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking);
  }
  int stream_destroy(cudaStream_t stream) override { return cudaStreamDestroy(stream); }
  int event_create(cudaEvent_t* event) override {
    return cudaEventCreateWithFlags(event, cudaEventDisableTiming);
  }
  int event_destroy(cudaEvent_t event) override { return cudaEventDestroy(event); }
  int event_record(cudaEvent_t event, cudaStream_t stream) override {
    return cudaEventRecord(event, stream);
  }
  int event_query(cudaEvent_t event) override { return cudaEventQuery(event); }
  int malloc_device(void** ptr, size_t bytes) override { return cudaMalloc(ptr, bytes); }
  int free_device(void* ptr) override { return cudaFree(ptr); }
  int memcpy_async(void* dst, const void* src, size_t bytes, cudaStream_t stream) override {
    return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream);
  }
  int pointer_kind(const void* ptr, MemoryKind* kind, int* device) override {
    cudaPointerAttributes attributes{};
    const cudaError_t e = cudaPointerGetAttributes(&attributes, ptr);
    if (e != cudaSuccess) return e;
    *device = attributes.device;
    switch (attributes.type) {
      case cudaMemoryTypeDevice: *kind = MemoryKind::kDevice; break;
      case cudaMemoryTypeManaged: *kind = MemoryKind::kManaged; break;
      default:  // unregistered or page-locked host memory
        *kind = MemoryKind::kHost;
        break;
    }
    return cudaSuccess;
  }

  Status scale(void* buf, size_t count, DataType dtype, double factor,
               cudaStream_t stream) override {
    return kernels::cuda::scale(buf, count, dtype, factor, stream);
  }
  Status reduce3(void* dst, const void* a, const void* b, size_t count, DataType dtype, ReduceOp op,
                 cudaStream_t stream) override {
    return kernels::cuda::reduce3(dst, a, b, count, dtype, op, stream);
  }
};

#undef HORA_NCCL_CALL

}  // namespace

NcclApi& real_nccl_api() {
  static RealNcclApi api;  // stateless
  return api;
}

}  // namespace nccl_backend
}  // namespace collectives
}  // namespace hora
