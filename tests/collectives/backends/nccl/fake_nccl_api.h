// FakeNcclApi: an NcclApi without NCCL, CUDA or a GPU, for the NCCL backend's unit tests. It
// records every NCCL launch as a line of text ("send 16 to 1", "group_end") and lets a test
// script what NCCL and CUDA answer: the device count, how many polls init and each enqueue
// stay in progress, an asynchronous error, events that never complete, host pointers.
//
// Thread-safety: the communicator's thread calls it; tests read `log` after the calls return.
// Only abort() of the communicator may come from another thread, and it does not reach here.
#pragma once

#include <atomic>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "collectives/backends/nccl/nccl_api.h"

namespace hora {
namespace collectives {
namespace nccl_test {

class FakeNcclApi : public nccl_backend::NcclApi {
 public:
  // --- what the test scripts ---
  int device_count = 1;            // 0 or negative: cudaGetDeviceCount fails (error 35)
  int init_polls_in_progress = 0;  // ncclCommGetAsyncError says ncclInProgress this often
  bool init_never_finishes = false;
  ncclResult_t init_result = ncclInProgress;  // what ncclCommInitRankConfig returns
  // From this many ncclCommGetAsyncError calls after init on, the async error is `async_error`.
  int async_error_after_polls = -1;
  ncclResult_t async_error = ncclRemoteError;
  // The stream of the last all_reduce, and how many event queries were made.
  cudaStream_t last_all_reduce_stream = nullptr;
  std::atomic<int> event_queries{0};
  bool events_never_complete = false;
  std::set<const void*> host_pointers;  // pointer_kind says kHost for these
  int pointer_device = 0;               // the device of every other pointer

  // --- what the test reads ---
  std::vector<std::string> log;  // NCCL launches, scale calls, comm lifetime
  int aborts = 0;
  int destroys = 0;
  int finalizes = 0;
  int init_blocking = -1;  // the config.blocking init was given
  int selected_device = -1;
  std::atomic<int> async_polls{0};

  ncclResult_t get_version(int* version) override;
  ncclResult_t get_unique_id(ncclUniqueId* id) override;
  ncclResult_t comm_init_rank_config(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                     ncclConfig_t* config) override;
  ncclResult_t comm_get_async_error(ncclComm_t comm, ncclResult_t* error) override;
  ncclResult_t comm_finalize(ncclComm_t comm) override;
  ncclResult_t comm_destroy(ncclComm_t comm) override;
  ncclResult_t comm_abort(ncclComm_t comm) override;
  const char* get_error_string(ncclResult_t result) override;
  const char* get_last_error(ncclComm_t comm) override;
  ncclResult_t group_start() override;
  ncclResult_t group_end() override;
  ncclResult_t send(const void* data, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                    cudaStream_t stream) override;
  ncclResult_t recv(void* data, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                    cudaStream_t stream) override;
  ncclResult_t all_reduce(const void* in, void* out, size_t count, ncclDataType_t type,
                          ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) override;
  ncclResult_t broadcast(const void* in, void* out, size_t count, ncclDataType_t type, int root,
                         ncclComm_t comm, cudaStream_t stream) override;
  ncclResult_t reduce(const void* in, void* out, size_t count, ncclDataType_t type, ncclRedOp_t op,
                      int root, ncclComm_t comm, cudaStream_t stream) override;
  ncclResult_t all_gather(const void* in, void* out, size_t send_count, ncclDataType_t type,
                          ncclComm_t comm, cudaStream_t stream) override;
  ncclResult_t reduce_scatter(const void* in, void* out, size_t recv_count, ncclDataType_t type,
                              ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) override;

  int get_device_count(int* count) override;
  int set_device(int device) override;
  int stream_create(cudaStream_t* stream) override;
  int stream_destroy(cudaStream_t stream) override;
  int event_create(cudaEvent_t* event) override;
  int event_destroy(cudaEvent_t event) override;
  int event_record(cudaEvent_t event, cudaStream_t stream) override;
  int event_query(cudaEvent_t event) override;
  int malloc_device(void** ptr, size_t bytes) override;
  int free_device(void* ptr) override;
  int memcpy_async(void* dst, const void* src, size_t bytes, cudaStream_t stream) override;
  int pointer_kind(const void* ptr, nccl_backend::MemoryKind* kind, int* device) override;
  Status scale(void* buf, size_t count, DataType dtype, double factor,
               cudaStream_t stream) override;
  Status reduce3(void* dst, const void* a, const void* b, size_t count, DataType dtype, ReduceOp op,
                 cudaStream_t stream) override;

  // Events and streams created and not destroyed (the communicator must release them all).
  int live_events() const { return live_events_; }

 private:
  bool initialised_ = false;
  int live_events_ = 0;
  uint8_t scratch_[256] = {};
};

}  // namespace nccl_test
}  // namespace collectives
}  // namespace hora
