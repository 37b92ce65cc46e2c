// Communicator: one group of ranks over one backend (builtin, gloo, mpi, nccl).
//
// It offers point-to-point send/recv, which hora's own algorithms (collectives/algorithms/)
// are written against, and the backend's native collectives for the `native` algorithm.
// Native collectives a backend lacks return kUnimplemented.
//
// Ordering: messages from one rank to one peer with the same tag are matched in the order
// they were posted (MPI's non-overtaking rule; gloo slots; the builtin FIFOs). A recv must
// name the exact byte count the matching send sent; a mismatch is an error, never a silent
// truncation.
//
// Threads: only one thread (the engine's background thread) uses a communicator at a time;
// abort() alone may be called from any thread. Every blocking call takes a Deadline and
// returns kTimeout naming the peer it was waiting for; a peer that fails or leaves gives
// kRemote naming it. After abort() every pending and later wait returns promptly with an error.
//
// Ownership: created by a backend factory as unique_ptr; buffers passed in belong to the
// caller and must stay valid until the call (or the request's wait) returns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "collectives/reduce_span.h"
#include "core/base/deadline.h"
#include "hora/data_type.h"
#include "hora/reduce_op.h"
#include "hora/status.h"

namespace hora {
namespace collectives {

class BufferOps;

// An outstanding asynchronous send or receive.
class Request {
 public:
  virtual ~Request() = default;
  // Blocks until the transfer completes, the deadline passes (kTimeout naming the peer) or the
  // communicator is aborted. Calling wait again after it returned returns the same Status.
  virtual Status wait(Deadline deadline) = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "gloo", "mpi", "builtin", "nccl".
  virtual const char* backend_name() const = 0;
  // The selector's cost-table row for this communicator (collectives/selector.cc): the backend
  // name, unless its costs depend on how it was set up ("builtin-shm": the builtin backend with
  // its shared-memory collectives, every rank on one host). A string literal: a calibration
  // remembers the one it matched by its address (AllreduceCalibration::applies_to).
  virtual const char* cost_model() const { return backend_name(); }

  // Point to point. `bytes` may be 0. Blocking forms return when the buffer may be reused.
  virtual Status send(int peer, const void* data, size_t bytes, uint32_t tag, Deadline deadline);
  virtual Status recv(int peer, void* data, size_t bytes, uint32_t tag, Deadline deadline);
  virtual StatusOr<std::unique_ptr<Request>> isend(int peer, const void* data, size_t bytes,
                                                   uint32_t tag) = 0;
  virtual StatusOr<std::unique_ptr<Request>> irecv(int peer, void* data, size_t bytes,
                                                   uint32_t tag) = 0;

  // Native collectives (the backend library's own algorithms). Counts are elements.
  // In place when in == out. The defaults return kUnimplemented. Backends refuse sum and
  // average on bool in allreduce and reducescatter with kInvalidArgument (check_reduce_op).
  virtual Status allreduce(const void* in, void* out, size_t count, DataType dtype, ReduceOp op,
                           Deadline deadline);
  // Rank r contributes counts[r] elements; out holds sum(counts) elements in rank order.
  virtual Status allgatherv(const void* in, void* out, const std::vector<size_t>& counts,
                            DataType dtype, Deadline deadline);
  virtual Status broadcast(void* buf, size_t count, DataType dtype, int root, Deadline deadline);
  // send_counts[p] elements go to peer p (laid out in peer order in `in`); recv_counts[p]
  // come from peer p (in peer order in `out`).
  virtual Status alltoallv(const void* in, const std::vector<size_t>& send_counts, void* out,
                           const std::vector<size_t>& recv_counts, DataType dtype,
                           Deadline deadline);
  // in holds sum(recv_counts) elements; rank r receives the reduction of block r
  // (recv_counts[r] elements) into out.
  virtual Status reducescatter(const void* in, void* out, const std::vector<size_t>& recv_counts,
                               DataType dtype, ReduceOp op, Deadline deadline);
  virtual Status barrier(Deadline deadline);

  // Whether allreduce() takes kAverage itself, scaling by 1/size in its reduction pass with the
  // bits of kSum followed by kernels::scale; run_allreduce otherwise passes kSum and scales the
  // result in a pass of its own. The same on every rank. Default: false.
  virtual bool has_allreduce_average() const { return false; }

  // Gather-list allreduce (reduce_span.h): the native allreduce of the concatenation of this
  // rank's `spans`, each read and written where it lies, without packing them into one buffer.
  // Each contribution is multiplied by `prescale` as it is read (kernels::scale_copy) and each
  // result element by `postscale` (kAverage: postscale * (1.0 / size)) after the reduction, so
  // the bits equal packing with scale_copy(prescale), the native allreduce with kSum (or `op`)
  // and unpacking with scale_copy(postscale). Every rank calls it together with the same op,
  // dtype, scale factors and total count. The default returns kUnimplemented; a backend that
  // implements it returns true from has_allreduce_spans() on every rank alike.
  virtual bool has_allreduce_spans() const { return false; }
  virtual Status allreduce_spans(const std::vector<ReduceSpan>& spans, DataType dtype, ReduceOp op,
                                 double prescale, double postscale, Deadline deadline);

  // Stream-ordered allreduce (a device communicator: NCCL): enqueues the allreduce of `count`
  // elements on `stream` (a cudaStream_t of the communicator's device) behind the work already
  // there, and returns without waiting for it to run; `deadline` bounds only the enqueue.
  // Completion is what an event recorded on `stream` afterwards says; a failure while it runs
  // (a peer gone, abort()) is what async_error() says. kSum, kMin, kMax and kProduct (kAverage
  // is kInvalidArgument: the caller scales). Every rank calls it together, as allreduce().
  // The default returns kUnimplemented; has_stream_allreduce() says whether it is there.
  virtual bool has_stream_allreduce() const { return false; }
  virtual Status allreduce_on_stream(const void* in, void* out, size_t count, DataType dtype,
                                     ReduceOp op, void* stream, Deadline deadline);
  // The failure of work enqueued earlier that no wait of this communicator saw (a stream-ordered
  // collective whose peer failed, abort()), or OK. Does not block. Any thread (the engine's
  // finalizer polls it while the communicator's thread enqueues). Default: OK.
  virtual Status async_error() { return Status::OK(); }

  // Memory of at least `bytes` that the backend's peers on this host can read directly (the
  // builtin backend's shared-memory exchange), or nullptr when the backend has none or not that
  // much (the default). A collective whose input lies inside it skips its copy-in (single
  // copy), so the engine's fusion buffer should live there. Every call returns the same region
  // (this rank's; not zeroed); it stays valid until the communicator is destroyed. Peers read
  // it only while a collective given a pointer into it runs. Does not block; the
  // communicator's thread.
  virtual void* shared_buffer(size_t bytes) {
    (void)bytes;
    return nullptr;
  }

  // How hora's algorithms reduce, scale, copy and get scratch on this communicator's buffers
  // (buffer_ops.h), or nullptr for host memory (kernels/ and the caller's ScratchPool; the
  // default). The nccl backend returns its GPU implementation. Valid as long as the
  // communicator; the communicator's thread.
  virtual BufferOps* buffer_ops() { return nullptr; }

  // Makes every pending and future wait fail promptly (kRemote, "aborted"). Any thread.
  virtual void abort() = 0;
};

}  // namespace collectives
}  // namespace hora
