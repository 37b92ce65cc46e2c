#include "tests/support/fake_nccl_communicator.h"

#include <chrono>
#include <numeric>
#include <string>
#include <utility>

#include "collectives/algorithms/algorithms.h"

namespace hora {
namespace test_support {
namespace {

collectives::AlgorithmOptions with(Deadline deadline) {
  collectives::AlgorithmOptions ao;
  ao.deadline = deadline;
  return ao;
}

void spin(int64_t ns) {
  if (ns <= 0) return;
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
  while (std::chrono::steady_clock::now() < until) {
  }
}

size_t sum(const std::vector<size_t>& v) { return std::accumulate(v.begin(), v.end(), size_t{0}); }

}  // namespace

Status FakeNcclCommunicator::device_only(const char* what, const void* p, size_t count) const {
  if (count == 0 || runtime_->is_device_memory(p)) return Status::OK();
  return Status::invalid_argument(std::string("fake nccl: ") + what + " is not device memory");
}

StatusOr<std::unique_ptr<collectives::Request>> FakeNcclCommunicator::isend(int peer,
                                                                            const void* data,
                                                                            size_t bytes,
                                                                            uint32_t tag) {
  return inner_->isend(peer, data, bytes, tag);
}

StatusOr<std::unique_ptr<collectives::Request>> FakeNcclCommunicator::irecv(int peer, void* data,
                                                                            size_t bytes,
                                                                            uint32_t tag) {
  return inner_->irecv(peer, data, bytes, tag);
}

Status FakeNcclCommunicator::allreduce_on_stream(const void* in, void* out, size_t count,
                                                 DataType dtype, ReduceOp op, void* stream,
                                                 Deadline deadline) {
  if (op == ReduceOp::kAverage)
    return Status::invalid_argument("fake nccl: stream-ordered allreduce of an average");
  spin(launch_ns.load());
  runtime_->run_on_stream(stream, device_ns.load());
  ++stream_allreduces;
  return reduce(in, out, count, dtype, op, deadline);
}

Status FakeNcclCommunicator::async_error() {
  MutexLock lock(&mu_);
  return async_error_;
}

void FakeNcclCommunicator::fail_async(Status status) {
  MutexLock lock(&mu_);
  async_error_ = std::move(status);
}

Status FakeNcclCommunicator::allreduce(const void* in, void* out, size_t count, DataType dtype,
                                       ReduceOp op, Deadline deadline) {
  spin(launch_ns.load() + sync_ns.load() + device_ns.load());
  return reduce(in, out, count, dtype, op, deadline);
}

Status FakeNcclCommunicator::reduce(const void* in, void* out, size_t count, DataType dtype,
                                    ReduceOp op, Deadline deadline) {
  ++allreduces;
  last_dtype = dtype;
  HORA_RETURN_IF_ERROR(device_only("allreduce input", in, count));
  HORA_RETURN_IF_ERROR(device_only("allreduce output", out, count));
  return collectives::ring_allreduce(*inner_, in, out, count, dtype, op, with(deadline));
}

Status FakeNcclCommunicator::broadcast(void* buf, size_t count, DataType dtype, int root,
                                       Deadline deadline) {
  ++broadcasts;
  last_dtype = dtype;
  HORA_RETURN_IF_ERROR(device_only("broadcast buffer", buf, count));
  return collectives::pipelined_broadcast(*inner_, buf, buf, count, dtype, root, with(deadline));
}

Status FakeNcclCommunicator::allgatherv(const void* in, void* out,
                                        const std::vector<size_t>& counts, DataType dtype,
                                        Deadline deadline) {
  ++allgathers;
  last_dtype = dtype;
  HORA_RETURN_IF_ERROR(device_only("allgather input", in, counts.at(rank())));
  HORA_RETURN_IF_ERROR(device_only("allgather output", out, sum(counts)));
  return collectives::ring_allgatherv(*inner_, in, out, counts, dtype, with(deadline));
}

Status FakeNcclCommunicator::alltoallv(const void* in, const std::vector<size_t>& send_counts,
                                       void* out, const std::vector<size_t>& recv_counts,
                                       DataType dtype, Deadline deadline) {
  ++alltoalls;
  last_dtype = dtype;
  HORA_RETURN_IF_ERROR(device_only("alltoall input", in, sum(send_counts)));
  HORA_RETURN_IF_ERROR(device_only("alltoall output", out, sum(recv_counts)));
  return collectives::pairwise_alltoallv(*inner_, in, send_counts, out, recv_counts, dtype,
                                         with(deadline));
}

Status FakeNcclCommunicator::reducescatter(const void* in, void* out,
                                           const std::vector<size_t>& recv_counts, DataType dtype,
                                           ReduceOp op, Deadline deadline) {
  ++reducescatters;
  last_dtype = dtype;
  HORA_RETURN_IF_ERROR(device_only("reducescatter input", in, sum(recv_counts)));
  HORA_RETURN_IF_ERROR(device_only("reducescatter output", out, recv_counts.at(rank())));
  return collectives::ring_reducescatter(*inner_, in, out, recv_counts, dtype, op, with(deadline));
}

}  // namespace test_support
}  // namespace hora
