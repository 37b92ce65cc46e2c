// NcclCommunicator: the class behind create_nccl_communicator (nccl_communicator.h has the
// contract). Internal to collectives/backends/nccl/: lifetime, checks and failure handling
// live in nccl_communicator.cc, point to point in nccl_p2p.cc, native collectives in
// nccl_collectives.cc.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/backends/nccl/nccl_buffer_ops.h"
#include "collectives/backends/nccl/nccl_communicator.h"
#include "collectives/backends/nccl/nccl_poll.h"
#include "collectives/rendezvous/failure_board.h"
#include "hora/mutex.h"
#include "hora/thread_annotations.h"

namespace hora {
namespace collectives {
namespace nccl_backend {

// A CUDA event recorded after one launched group of sends and receives; shared by the ops of
// the group (each op's Request and the communicator refer to it), destroyed with the last.
class GroupEvent {
 public:
  GroupEvent(NcclApi& api, cudaEvent_t event) : api_(api), event_(event) {}
  ~GroupEvent() { api_.event_destroy(event_); }
  GroupEvent(const GroupEvent&) = delete;
  GroupEvent& operator=(const GroupEvent&) = delete;
  cudaEvent_t event() const { return event_; }
  // Set once a wait saw the event complete, so later waits of the group skip the query.
  bool is_complete() const { return is_complete_; }
  void mark_complete() { is_complete_ = true; }

 private:
  NcclApi& api_;
  cudaEvent_t event_;
  bool is_complete_ = false;
};

// One isend or irecv. Shared between its Request (owned by the caller) and the queue of
// unlaunched ops (owned by the communicator): either may go first.
struct P2pOp {
  bool is_send = false;
  int peer = 0;
  void* data = nullptr;
  size_t bytes = 0;
  uint32_t tag = 0;
  std::shared_ptr<GroupEvent> group;  // null until launched
  bool done = false;
  Status status;
};

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(NcclApi& api, int rank, int size, Store& store, const NcclOptions& options);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  // Creation steps 1-3 (nccl_communicator.h). On failure the object is left for destruction.
  Status start(Deadline deadline);

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend_name() const override { return "nccl"; }

  StatusOr<std::unique_ptr<Request>> isend(int peer, const void* data, size_t bytes,
                                           uint32_t tag) override;
  StatusOr<std::unique_ptr<Request>> irecv(int peer, void* data, size_t bytes,
                                           uint32_t tag) override;

  Status allreduce(const void* in, void* out, size_t count, DataType dtype, ReduceOp op,
                   Deadline deadline) override;
  Status allgatherv(const void* in, void* out, const std::vector<size_t>& counts, DataType dtype,
                    Deadline deadline) override;
  Status broadcast(void* buf, size_t count, DataType dtype, int root, Deadline deadline) override;
  Status alltoallv(const void* in, const std::vector<size_t>& send_counts, void* out,
                   const std::vector<size_t>& recv_counts, DataType dtype,
                   Deadline deadline) override;
  Status reducescatter(const void* in, void* out, const std::vector<size_t>& recv_counts,
                       DataType dtype, ReduceOp op, Deadline deadline) override;
  Status barrier(Deadline deadline) override;
  bool has_stream_allreduce() const override { return true; }
  Status allreduce_on_stream(const void* in, void* out, size_t count, DataType dtype, ReduceOp op,
                             void* stream, Deadline deadline) override;
  Status async_error() override;

  // The CUDA kernels, device copies and device scratch hora's algorithms use here.
  BufferOps* buffer_ops() override { return buffer_ops_.get(); }

  void abort() override { aborted_.store(true, std::memory_order_release); }

  // --- for NcclRequest (nccl_p2p.cc) ---
  // Launches `op` (with the group rule of nccl_communicator.h) if it has not been, then waits
  // for its group's event.
  Status wait_op(P2pOp& op, Deadline deadline);
  // Forgets a queued op whose request was destroyed before it was launched.
  void drop_queued(const P2pOp* op);

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_; }
  NcclApi& api() { return api_; }

 private:
  std::string describe() const;  // "rank 1 of 4 (cuda:1)"
  Status check_usable(const std::string& what) const;
  // cudaSetDevice(device_) for the calling thread: every entry point that enqueues work calls
  // it, since the current device is per thread and the engine's thread is not the creator's.
  Status use_device();
  // Records the first failure, aborts the NCCL communicator, and returns the error to report:
  // a peer failure or a timeout gains the other ranks' reports (waits up to 1.5 s for them).
  Status fail(const Status& status);
  // kInvalidArgument unless `ptr` (of `bytes`, > 0) is memory of this communicator's device.
  Status check_device_memory(const void* ptr, size_t bytes, const std::string& what);
  // After an NCCL enqueue call (or group end) returned `result`: polls until NCCL has finished
  // enqueueing (a non-blocking communicator may return ncclInProgress). Fails the
  // communicator on error.
  Status finish_enqueue(ncclResult_t result, const std::string& what, Deadline deadline);
  // Records `event` on the stream and polls it to completion; fails the communicator on error.
  Status wait_stream(cudaEvent_t event, const std::string& what, Deadline deadline);
  // Runs `enqueue` (NCCL calls on the stream, a group or a single call), optionally a device
  // scale of out by 1/size (kAverage), then waits for the stream. The whole shape of every
  // native collective.
  Status run_collective(const std::string& what, Deadline deadline,
                        const std::function<ncclResult_t()>& enqueue);
  Status scale_average(void* out, size_t count, DataType dtype, const std::string& what);
  // allreduce's and allreduce_on_stream's checks and ncclAllReduce on `stream`, not waited.
  Status enqueue_allreduce(const std::string& what, const void* in, void* out, size_t count,
                           DataType dtype, ReduceOp op, cudaStream_t stream, Deadline deadline);
  // Launches the queued ops that `op` needs (nccl_communicator.h's rule), as one group.
  Status launch_for(const P2pOp& op, Deadline deadline);
  // Launches every queued op (before a collective, so stream order follows posting order).
  Status launch_all_queued(Deadline deadline);
  Status launch_group(std::vector<std::shared_ptr<P2pOp>> ops, Deadline deadline);
  StatusOr<std::unique_ptr<Request>> post(bool is_send, int peer, void* data, size_t bytes,
                                          uint32_t tag);
  PollTarget poll_target() const;
  // "" while every peer process on this host lives; else names the first one gone.
  std::string dead_peer() const;
  Status read_peer_processes(Deadline deadline);

  NcclApi& api_;
  const int rank_;
  const int size_;
  Store& store_;
  const NcclOptions options_;
  int device_ = -1;
  ncclComm_t comm_ = nullptr;  // null before init and after abort
  cudaStream_t stream_ = nullptr;
  cudaEvent_t collective_event_ = nullptr;
  void* scratch_ = nullptr;  // kScratchBytes of device memory (barrier, 0-byte messages)
  std::atomic<bool> aborted_{false};
  Status broken_;  // the first failure; the communicator's thread only
  // async_error()'s view from other threads: fail() aborts comm_ and sets health_error_ under
  // it, so a concurrent ncclCommGetAsyncError never sees a freed communicator.
  Mutex health_mu_;
  Status health_error_ HORA_GUARDED_BY(health_mu_);
  std::vector<std::shared_ptr<P2pOp>> queued_;  // posted, not launched, in posting order
  std::string hostname_;
  struct PeerProcess {
    std::string host;
    int pid = 0;
  };
  std::vector<PeerProcess> peers_;             // by rank, from the store after init
  std::unique_ptr<NcclBufferOps> buffer_ops_;  // made with the stream; freed before it
  FailureBoard board_;
};

}  // namespace nccl_backend
}  // namespace collectives
}  // namespace hora
