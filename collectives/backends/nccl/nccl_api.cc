// real_nccl_api(): NcclApi forwarding to NCCL and the CUDA runtime.
#include "collectives/backends/nccl/nccl_api.h"

#include "kernels/cuda/cuda_kernels.h"

namespace hora {
namespace collectives {
namespace nccl_backend {
namespace {

class RealNcclApi final : public NcclApi {
 public:
  ncclResult_t get_version(int* version) override { return ncclGetVersion(version); }
  ncclResult_t get_unique_id(ncclUniqueId* id) override { return ncclGetUniqueId(id); }
  ncclResult_t comm_init_rank_config(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                     ncclConfig_t* config) override {
    return ncclCommInitRankConfig(comm, nranks, id, rank, config);
  }
  ncclResult_t comm_get_async_error(ncclComm_t comm, ncclResult_t* error) override {
    return ncclCommGetAsyncError(comm, error);
  }
  ncclResult_t comm_finalize(ncclComm_t comm) override { return ncclCommFinalize(comm); }
  ncclResult_t comm_destroy(ncclComm_t comm) override { return ncclCommDestroy(comm); }
  ncclResult_t comm_abort(ncclComm_t comm) override { return ncclCommAbort(comm); }
  const char* get_error_string(ncclResult_t result) override { return ncclGetErrorString(result); }
  const char* get_last_error(ncclComm_t comm) override { return ncclGetLastError(comm); }

  ncclResult_t group_start() override { return ncclGroupStart(); }
  ncclResult_t group_end() override { return ncclGroupEnd(); }
  ncclResult_t send(const void* data, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                    cudaStream_t stream) override {
    return ncclSend(data, count, type, peer, comm, stream);
  }
  ncclResult_t recv(void* data, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                    cudaStream_t stream) override {
    return ncclRecv(data, count, type, peer, comm, stream);
  }
  ncclResult_t all_reduce(const void* in, void* out, size_t count, ncclDataType_t type,
                          ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) override {
    return ncclAllReduce(in, out, count, type, op, comm, stream);
  }
  ncclResult_t broadcast(const void* in, void* out, size_t count, ncclDataType_t type, int root,
                         ncclComm_t comm, cudaStream_t stream) override {
    return ncclBroadcast(in, out, count, type, root, comm, stream);
  }
  ncclResult_t reduce(const void* in, void* out, size_t count, ncclDataType_t type, ncclRedOp_t op,
                      int root, ncclComm_t comm, cudaStream_t stream) override {
    return ncclReduce(in, out, count, type, op, root, comm, stream);
  }
  ncclResult_t all_gather(const void* in, void* out, size_t send_count, ncclDataType_t type,
                          ncclComm_t comm, cudaStream_t stream) override {
    return ncclAllGather(in, out, send_count, type, comm, stream);
  }
  ncclResult_t reduce_scatter(const void* in, void* out, size_t recv_count, ncclDataType_t type,
                              ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) override {
    return ncclReduceScatter(in, out, recv_count, type, op, comm, stream);
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
      case cudaMemoryTypeDevice:
        *kind = MemoryKind::kDevice;
        break;
      case cudaMemoryTypeManaged:
        *kind = MemoryKind::kManaged;
        break;
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

}  // namespace

NcclApi& real_nccl_api() {
  static RealNcclApi api;  // stateless
  return api;
}

}  // namespace nccl_backend
}  // namespace collectives
}  // namespace hora
