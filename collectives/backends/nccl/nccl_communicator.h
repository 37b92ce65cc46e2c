// The NCCL backend: a Communicator over NVIDIA's NCCL, for buffers in GPU memory.
//
// Creation (create_nccl_communicator), every step bounded by the deadline:
//   1. picks the CUDA device (NcclOptions::device, else local rank modulo the device count)
//      and makes the communicator's own stream on it; no usable device is kFailedPrecondition;
//   2. exchanges NCCL's unique id through hora's Store (nccl_unique_id.h) and posts this
//      process's host and pid under "nccl/proc/<rank>" (the dead-peer check below);
//   3. ncclCommInitRankConfig with blocking = 0 (non-blocking init), polled with
//      ncclCommGetAsyncError until ready; at the deadline the half-made communicator is
//      aborted (ncclCommAbort) and the error is kTimeout naming the ranks that never posted.
// One communicator per process and device: NCCL refuses two ranks on one GPU (its error says
// so). Every buffer must be device memory of that device (checked with
// cudaPointerGetAttributes unless NcclOptions::check_pointers is false): host memory is
// kInvalidArgument naming the buffer.
//
// Waiting: every call enqueues on the communicator's stream, then polls a CUDA event and
// ncclCommGetAsyncError with the caller's Deadline and the abort flag (nccl_poll.h), and
// returns once the work is complete on the GPU (so the host may reuse the buffer). A failure
// -- an asynchronous NCCL error, a deadline, a peer process on this host that is gone, or
// abort() -- aborts the NCCL communicator (ncclCommAbort, on the communicator's thread) and
// breaks this communicator: every later call fails with the first error. Errors name this
// rank and, where known, the peer; a peer failure or timeout also carries the other ranks'
// first-hand reports (failure_board.h, in the store, which must outlive the communicator).
//
// Point to point: NCCL matches sends and receives per pair in posting order and runs each
// launch to completion in stream order, so isend/irecv do not launch at once. They are queued
// and launched as one ncclGroupStart/End group when a request is waited: the group holds every
// queued send plus the queued receives from the awaited receive's peer up to it. A schedule
// that, like hora's algorithms, posts each step's sends and receives and then waits for them
// runs step by step; sends posted ahead of the steps that receive them (a multi-segment
// pipeline) could deadlock, so hora runs its algorithms over NCCL with one message per block
// and step (buffer_ops() says needs_whole_blocks; the CUDA kernels reduce on the stream).
// NCCL has no tags: tags are accepted and ignored, and messages of one pair match in posting
// order. Zero-byte messages travel as one byte so that they still synchronise. NCCL does not
// check that a receive names the sent byte count; a mismatch is undefined (it ends at the
// deadline).
//
// Native collectives: ncclAllReduce, ncclBroadcast, ncclAllGather and ncclReduceScatter for
// equal blocks (uneven blocks: grouped ncclBroadcast / ncclReduce, one per rank), alltoallv as
// one group of ncclSend/ncclRecv, barrier as a one-element allreduce. Types and ops:
// nccl_types.h (kAverage is a sum scaled by 1/size with the CUDA scale kernel).
//
// Threads: one thread at a time (the Communicator contract); abort() from any thread (it sets
// a flag that every wait polls).
#pragma once

#include <memory>
#include <string>

#include "collectives/backends/nccl/nccl_api.h"
#include "collectives/communicator.h"
#include "collectives/rendezvous/store.h"
#include "core/base/deadline.h"
#include "hora/status.h"

namespace hora {
namespace collectives {

struct NcclOptions {
  // CUDA device ordinal; -1: local_rank modulo the number of devices.
  int device = -1;
  // This rank's index among the ranks of its host; -1: use the global rank.
  int local_rank = -1;
  // Check that every buffer is device memory of the communicator's device.
  bool check_pointers = true;
  // This host's name for the dead-peer records; empty: gethostname().
  std::string hostname;
  // How long the destructor waits for ncclCommFinalize before it aborts instead.
  double finalize_timeout_s = 10.0;
};

// Creates rank `rank` of `size` (the steps above). `store` must outlive the communicator.
// `api` is the NCCL/CUDA entry points (tests pass a fake); it must outlive the communicator.
StatusOr<std::unique_ptr<Communicator>> create_nccl_communicator(
    int rank, int size, Store& store, const NcclOptions& options, Deadline deadline,
    nccl_backend::NcclApi& api = nccl_backend::real_nccl_api());

}  // namespace collectives
}  // namespace hora
