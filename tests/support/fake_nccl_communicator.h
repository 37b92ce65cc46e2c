// FakeNcclCommunicator: a stand-in for the NCCL communicator in tests of the engine's device
// path without a GPU. Its native collectives (allreduce, broadcast, allgatherv, alltoallv,
// reducescatter) run hora's algorithms over an in-process world, count the calls, remember
// the dtype of the last one, and fail unless every buffer is device memory of the
// FakeDeviceRuntime (where the engine must hand NCCL its buffers). Point-to-point goes to the
// in-process world, so hora's own algorithms also run over it. The stream-ordered allreduce
// runs at once, as the fake device does (counted in allreduces and stream_allreduces), after
// spinning launch_ns (NCCL's enqueue on the host); the blocking allreduce spins launch_ns and
// sync_ns (the enqueue, then the event record and query that wait for it); async_error() returns
// what fail_async() set, as a peer lost under an in-flight collective. Thread-safe as the world is.
#pragma once

#include <atomic>
#include <memory>

#include "collectives/communicator.h"
#include "hora/mutex.h"
#include "hora/thread_annotations.h"
#include "tests/support/fake_device_runtime.h"
#include "tests/support/inproc_communicator.h"

namespace hora {
namespace test_support {

class FakeNcclCommunicator : public collectives::Communicator {
 public:
  FakeNcclCommunicator(std::unique_ptr<InProcCommunicator> inner, FakeDeviceRuntime* runtime)
      : inner_(std::move(inner)), runtime_(runtime) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  const char* backend_name() const override { return "fake-nccl"; }
  StatusOr<std::unique_ptr<collectives::Request>> isend(int peer, const void* data, size_t bytes,
                                                        uint32_t tag) override;
  StatusOr<std::unique_ptr<collectives::Request>> irecv(int peer, void* data, size_t bytes,
                                                        uint32_t tag) override;
  Status allreduce(const void* in, void* out, size_t count, DataType dtype, ReduceOp op,
                   Deadline deadline) override;
  Status broadcast(void* buf, size_t count, DataType dtype, int root, Deadline deadline) override;
  Status allgatherv(const void* in, void* out, const std::vector<size_t>& counts, DataType dtype,
                    Deadline deadline) override;
  Status alltoallv(const void* in, const std::vector<size_t>& send_counts, void* out,
                   const std::vector<size_t>& recv_counts, DataType dtype,
                   Deadline deadline) override;
  Status reducescatter(const void* in, void* out, const std::vector<size_t>& recv_counts,
                       DataType dtype, ReduceOp op, Deadline deadline) override;
  bool has_stream_allreduce() const override { return true; }
  Status allreduce_on_stream(const void* in, void* out, size_t count, DataType dtype, ReduceOp op,
                             void* stream, Deadline deadline) override;
  Status async_error() override;
  void fail_async(Status status);
  void abort() override { inner_->abort(); }

  std::atomic<int64_t> launch_ns{0};
  std::atomic<int64_t> sync_ns{0};
  // Device time of a collective: on the stream of a stream-ordered allreduce (the runtime's
  // device clock), spun by the blocking one.
  std::atomic<int64_t> device_ns{0};
  std::atomic<int> stream_allreduces{0};

  std::atomic<int> allreduces{0};
  std::atomic<int> broadcasts{0};
  std::atomic<int> allgathers{0};
  std::atomic<int> alltoalls{0};
  std::atomic<int> reducescatters{0};
  std::atomic<DataType> last_dtype{DataType::kUint8};

 private:
  // kInvalidArgument naming `what` unless `p` is device memory (or nothing is moved).
  Status device_only(const char* what, const void* p, size_t count) const;
  Status reduce(const void* in, void* out, size_t count, DataType dtype, ReduceOp op,
                Deadline deadline);

  std::unique_ptr<InProcCommunicator> inner_;
  FakeDeviceRuntime* runtime_;
  Mutex mu_;
  Status async_error_ HORA_GUARDED_BY(mu_);
};

}  // namespace test_support
}  // namespace hora
