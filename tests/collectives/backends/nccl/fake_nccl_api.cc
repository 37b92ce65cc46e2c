#include "tests/collectives/backends/nccl/fake_nccl_api.h"

#include <cstring>

namespace hora {
namespace collectives {
namespace nccl_test {
namespace {

ncclComm_t fake_comm() { return reinterpret_cast<ncclComm_t>(uintptr_t{0x1000}); }

}  // namespace

ncclResult_t FakeNcclApi::get_version(int* version) {
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t FakeNcclApi::get_unique_id(ncclUniqueId* id) {
  for (size_t i = 0; i < sizeof id->internal; ++i) id->internal[i] = static_cast<char>(i * 7);
  return ncclSuccess;
}

ncclResult_t FakeNcclApi::comm_init_rank_config(ncclComm_t* comm, int, ncclUniqueId, int,
                                                ncclConfig_t* config) {
  init_blocking = config->blocking;
  log.push_back("init");
  if (init_result != ncclSuccess && init_result != ncclInProgress) return init_result;
  *comm = fake_comm();
  return init_result;
}

ncclResult_t FakeNcclApi::comm_get_async_error(ncclComm_t, ncclResult_t* error) {
  const int poll = async_polls.fetch_add(1);
  if (!initialised_) {
    if (init_never_finishes || poll < init_polls_in_progress) {
      *error = ncclInProgress;
      return ncclSuccess;
    }
    initialised_ = true;
  }
  *error =
      (async_error_after_polls >= 0 && poll >= async_error_after_polls) ? async_error : ncclSuccess;
  return ncclSuccess;
}

ncclResult_t FakeNcclApi::comm_finalize(ncclComm_t) {
  ++finalizes;
  log.push_back("finalize");
  return ncclSuccess;
}
ncclResult_t FakeNcclApi::comm_destroy(ncclComm_t) {
  ++destroys;
  log.push_back("destroy");
  return ncclSuccess;
}
ncclResult_t FakeNcclApi::comm_abort(ncclComm_t) {
  ++aborts;
  log.push_back("abort");
  return ncclSuccess;
}
const char* FakeNcclApi::get_error_string(ncclResult_t) { return "fake error"; }
const char* FakeNcclApi::get_last_error(ncclComm_t) { return "the fake's last error"; }

ncclResult_t FakeNcclApi::group_start() {
  log.push_back("group_start");
  return ncclSuccess;
}
ncclResult_t FakeNcclApi::group_end() {
  log.push_back("group_end");
  return ncclSuccess;
}
ncclResult_t FakeNcclApi::send(const void*, size_t count, ncclDataType_t, int peer, ncclComm_t,
                               cudaStream_t) {
  log.push_back("send " + std::to_string(count) + " to " + std::to_string(peer));
  return ncclSuccess;
}
ncclResult_t FakeNcclApi::recv(void*, size_t count, ncclDataType_t, int peer, ncclComm_t,
                               cudaStream_t) {
  log.push_back("recv " + std::to_string(count) + " from " + std::to_string(peer));
  return ncclSuccess;
}
ncclResult_t FakeNcclApi::all_reduce(const void*, void*, size_t count, ncclDataType_t type,
                                     ncclRedOp_t op, ncclComm_t, cudaStream_t stream) {
  last_all_reduce_stream = stream;
  log.push_back("all_reduce " + std::to_string(count) + " type " + std::to_string(type) + " op " +
                std::to_string(op));
  return ncclSuccess;
}
ncclResult_t FakeNcclApi::broadcast(const void*, void*, size_t count, ncclDataType_t, int root,
                                    ncclComm_t, cudaStream_t) {
  log.push_back("broadcast " + std::to_string(count) + " from " + std::to_string(root));
  return ncclSuccess;
}
ncclResult_t FakeNcclApi::reduce(const void*, void*, size_t count, ncclDataType_t, ncclRedOp_t,
                                 int root, ncclComm_t, cudaStream_t) {
  log.push_back("reduce " + std::to_string(count) + " to " + std::to_string(root));
  return ncclSuccess;
}
ncclResult_t FakeNcclApi::all_gather(const void*, void*, size_t send_count, ncclDataType_t,
                                     ncclComm_t, cudaStream_t) {
  log.push_back("all_gather " + std::to_string(send_count));
  return ncclSuccess;
}
ncclResult_t FakeNcclApi::reduce_scatter(const void*, void*, size_t recv_count, ncclDataType_t,
                                         ncclRedOp_t, ncclComm_t, cudaStream_t) {
  log.push_back("reduce_scatter " + std::to_string(recv_count));
  return ncclSuccess;
}

int FakeNcclApi::get_device_count(int* count) {
  if (device_count <= 0) return cudaErrorInsufficientDriver;
  *count = device_count;
  return cudaSuccess;
}
int FakeNcclApi::set_device(int device) {
  selected_device = device;
  return cudaSuccess;
}
int FakeNcclApi::stream_create(cudaStream_t* stream) {
  *stream = reinterpret_cast<cudaStream_t>(uintptr_t{0x2000});
  return cudaSuccess;
}
int FakeNcclApi::stream_destroy(cudaStream_t) { return cudaSuccess; }
int FakeNcclApi::event_create(cudaEvent_t* event) {
  ++live_events_;
  *event = reinterpret_cast<cudaEvent_t>(uintptr_t{0x3000} + live_events_);
  return cudaSuccess;
}
int FakeNcclApi::event_destroy(cudaEvent_t) {
  --live_events_;
  return cudaSuccess;
}
int FakeNcclApi::event_record(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
int FakeNcclApi::event_query(cudaEvent_t) {
  ++event_queries;
  return events_never_complete ? cudaErrorNotReady : cudaSuccess;
}
int FakeNcclApi::malloc_device(void** ptr, size_t bytes) {
  if (bytes > sizeof scratch_) return cudaErrorMemoryAllocation;
  *ptr = scratch_;
  return cudaSuccess;
}
int FakeNcclApi::free_device(void*) { return cudaSuccess; }
int FakeNcclApi::memcpy_async(void*, const void*, size_t, cudaStream_t) { return cudaSuccess; }
int FakeNcclApi::pointer_kind(const void* ptr, nccl_backend::MemoryKind* kind, int* device) {
  *kind = host_pointers.count(ptr) != 0 ? nccl_backend::MemoryKind::kHost
                                        : nccl_backend::MemoryKind::kDevice;
  *device = pointer_device;
  return cudaSuccess;
}
Status FakeNcclApi::scale(void*, size_t count, DataType dtype, double factor, cudaStream_t) {
  log.push_back("scale " + std::to_string(count) + " " + data_type_name(dtype) + " by " +
                std::to_string(factor));
  return Status::OK();
}

Status FakeNcclApi::reduce3(void*, const void*, const void*, size_t count, DataType dtype,
                            ReduceOp op, cudaStream_t) {
  log.push_back("reduce3 " + std::to_string(count) + " " + data_type_name(dtype) + " " +
                reduce_op_name(op));
  return Status::OK();
}

}  // namespace nccl_test
}  // namespace collectives
}  // namespace hora
