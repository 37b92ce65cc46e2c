// NcclCommunicator's native collectives: NCCL's own, one stream, waited with the deadline.
#include <numeric>

#include "collectives/backends/nccl/nccl_communicator_impl.h"
#include "collectives/backends/nccl/nccl_status.h"
#include "collectives/backends/nccl/nccl_types.h"

namespace hora {
namespace collectives {
namespace nccl_backend {
namespace {

std::vector<size_t> offsets_of(const std::vector<size_t>& counts) {
  std::vector<size_t> offsets(counts.size() + 1, 0);
  for (size_t k = 0; k < counts.size(); ++k) offsets[k + 1] = offsets[k] + counts[k];
  return offsets;
}

bool all_equal(const std::vector<size_t>& counts) {
  for (size_t c : counts)
    if (c != counts.front()) return false;
  return true;
}

std::string describe_call(const char* name, size_t count, DataType dtype) {
  return std::string(name) + " of " + std::to_string(count) + " " + data_type_name(dtype);
}

// kInvalidArgument unless `counts` holds one count per rank (`who`: the communicator).
Status check_counts(const std::string& who, const char* collective,
                    const std::vector<size_t>& counts, int size) {
  if (static_cast<int>(counts.size()) == size) return Status::OK();
  return Status::invalid_argument("nccl: " + who + ": " + collective + " with " +
                                  std::to_string(counts.size()) + " counts for " +
                                  std::to_string(size) + " ranks");
}

}  // namespace

Status NcclCommunicator::run_collective(const std::string& what, Deadline deadline,
                                        const std::function<ncclResult_t()>& enqueue) {
  HORA_RETURN_IF_ERROR(check_usable(what));
  HORA_RETURN_IF_ERROR(use_device());
  HORA_RETURN_IF_ERROR(launch_all_queued(deadline));
  HORA_RETURN_IF_ERROR(finish_enqueue(enqueue(), what, deadline));
  return Status::OK();
}

Status NcclCommunicator::scale_average(void* out, size_t count, DataType dtype,
                                       const std::string& what) {
  Status status = api_.scale(out, count, dtype, 1.0 / size_, stream_);
  return status.ok() ? status : fail(status.with_context(" (nccl: " + what + ")"));
}

Status NcclCommunicator::enqueue_allreduce(const std::string& what, const void* in, void* out,
                                           size_t count, DataType dtype, ReduceOp op,
                                           cudaStream_t stream, Deadline deadline) {
  HORA_RETURN_IF_ERROR(check_reduce_op(op, dtype, "nccl: " + describe() + ": " + what));
  HORA_ASSIGN_OR_RETURN(ncclDataType_t type, nccl_reduce_type(dtype));
  if (count == 0) return check_usable(what);
  const size_t bytes = count * data_type_bytes(dtype);
  HORA_RETURN_IF_ERROR(check_device_memory(in, bytes, what + " input"));
  HORA_RETURN_IF_ERROR(check_device_memory(out, bytes, what + " output"));
  return run_collective(what, deadline, [&] {
    return api_.all_reduce(in, out, count, type, nccl_reduce_op(op), comm_, stream);
  });
}

Status NcclCommunicator::allreduce(const void* in, void* out, size_t count, DataType dtype,
                                   ReduceOp op, Deadline deadline) {
  const std::string what = describe_call("allreduce", count, dtype);
  HORA_RETURN_IF_ERROR(enqueue_allreduce(what, in, out, count, dtype, op, stream_, deadline));
  if (count == 0) return Status::OK();
  if (op == ReduceOp::kAverage) HORA_RETURN_IF_ERROR(scale_average(out, count, dtype, what));
  return wait_stream(collective_event_, what, deadline);
}

Status NcclCommunicator::allreduce_on_stream(const void* in, void* out, size_t count,
                                             DataType dtype, ReduceOp op, void* stream,
                                             Deadline deadline) {
  const std::string what = describe_call("stream-ordered allreduce", count, dtype);
  if (op == ReduceOp::kAverage)
    return Status::invalid_argument("nccl: " + describe() + ": " + what +
                                    ": average (the caller scales a sum)");
  // Enqueued on the caller's stream, behind its work: no wait here, on the host or between
  // streams.
  return enqueue_allreduce(what, in, out, count, dtype, op, static_cast<cudaStream_t>(stream),
                           deadline);
}

Status NcclCommunicator::broadcast(void* buf, size_t count, DataType dtype, int root,
                                   Deadline deadline) {
  const std::string what =
      describe_call("broadcast", count, dtype) + " from rank " + std::to_string(root);
  if (root < 0 || root >= size_)
    return Status::invalid_argument("nccl: " + describe() + ": " + what + ": root is not a rank");
  if (count == 0) return check_usable(what);
  const size_t bytes = count * data_type_bytes(dtype);
  HORA_RETURN_IF_ERROR(check_device_memory(buf, bytes, what));
  HORA_RETURN_IF_ERROR(run_collective(what, deadline, [&] {
    return api_.broadcast(buf, buf, bytes, ncclUint8, root, comm_, stream_);
  }));
  return wait_stream(collective_event_, what, deadline);
}

Status NcclCommunicator::allgatherv(const void* in, void* out, const std::vector<size_t>& counts,
                                    DataType dtype, Deadline deadline) {
  const size_t elem = data_type_bytes(dtype);
  HORA_RETURN_IF_ERROR(check_counts(describe(), "allgatherv", counts, size_));
  const std::vector<size_t> offsets = offsets_of(counts);
  const std::string what = describe_call("allgatherv", offsets[size_], dtype);
  if (offsets[size_] == 0) return check_usable(what);
  HORA_RETURN_IF_ERROR(check_device_memory(in, counts[rank_] * elem, what + " input"));
  HORA_RETURN_IF_ERROR(check_device_memory(out, offsets[size_] * elem, what + " output"));
  auto* out_bytes = static_cast<uint8_t*>(out);
  HORA_RETURN_IF_ERROR(run_collective(what, deadline, [&]() -> ncclResult_t {
    if (all_equal(counts))
      return api_.all_gather(in, out, counts[0] * elem, ncclUint8, comm_, stream_);
    // Uneven blocks: each rank broadcasts its own, all in one group.
    ncclResult_t result = api_.group_start();
    for (int r = 0; r < size_ && result == ncclSuccess; ++r) {
      if (counts[r] == 0) continue;
      const void* from = r == rank_ ? in : out_bytes + offsets[r] * elem;
      result = api_.broadcast(from, out_bytes + offsets[r] * elem, counts[r] * elem, ncclUint8, r,
                              comm_, stream_);
    }
    const ncclResult_t end = api_.group_end();
    return result != ncclSuccess ? result : end;
  }));
  return wait_stream(collective_event_, what, deadline);
}

Status NcclCommunicator::reducescatter(const void* in, void* out,
                                       const std::vector<size_t>& recv_counts, DataType dtype,
                                       ReduceOp op, Deadline deadline) {
  const size_t elem = data_type_bytes(dtype);
  HORA_RETURN_IF_ERROR(check_counts(describe(), "reducescatter", recv_counts, size_));
  const std::vector<size_t> offsets = offsets_of(recv_counts);
  const std::string what = describe_call("reducescatter", offsets[size_], dtype);
  HORA_RETURN_IF_ERROR(check_reduce_op(op, dtype, "nccl: " + describe() + ": " + what));
  HORA_ASSIGN_OR_RETURN(ncclDataType_t type, nccl_reduce_type(dtype));
  if (offsets[size_] == 0) return check_usable(what);
  HORA_RETURN_IF_ERROR(check_device_memory(in, offsets[size_] * elem, what + " input"));
  HORA_RETURN_IF_ERROR(check_device_memory(out, recv_counts[rank_] * elem, what + " output"));
  const auto* in_bytes = static_cast<const uint8_t*>(in);
  const ncclRedOp_t nccl_op = nccl_reduce_op(op);
  HORA_RETURN_IF_ERROR(run_collective(what, deadline, [&]() -> ncclResult_t {
    if (all_equal(recv_counts))
      return api_.reduce_scatter(in, out, recv_counts[0], type, nccl_op, comm_, stream_);
    // Uneven blocks: one reduce to each block's rank, all in one group (out is only written on
    // the root of each).
    ncclResult_t result = api_.group_start();
    for (int r = 0; r < size_ && result == ncclSuccess; ++r) {
      if (recv_counts[r] == 0) continue;
      result = api_.reduce(in_bytes + offsets[r] * elem, out, recv_counts[r], type, nccl_op, r,
                           comm_, stream_);
    }
    const ncclResult_t end = api_.group_end();
    return result != ncclSuccess ? result : end;
  }));
  if (op == ReduceOp::kAverage)
    HORA_RETURN_IF_ERROR(scale_average(out, recv_counts[rank_], dtype, what));
  return wait_stream(collective_event_, what, deadline);
}

Status NcclCommunicator::alltoallv(const void* in, const std::vector<size_t>& send_counts,
                                   void* out, const std::vector<size_t>& recv_counts,
                                   DataType dtype, Deadline deadline) {
  const size_t elem = data_type_bytes(dtype);
  if (static_cast<int>(send_counts.size()) != size_ ||
      static_cast<int>(recv_counts.size()) != size_)
    return Status::invalid_argument("nccl: " + describe() + ": alltoallv with " +
                                    std::to_string(send_counts.size()) + " send counts and " +
                                    std::to_string(recv_counts.size()) + " receive counts for " +
                                    std::to_string(size_) + " ranks");
  const std::vector<size_t> send_offsets = offsets_of(send_counts);
  const std::vector<size_t> recv_offsets = offsets_of(recv_counts);
  const std::string what = describe_call("alltoallv", send_offsets[size_], dtype);
  if (send_counts[rank_] != recv_counts[rank_])
    return Status::mismatch("nccl: " + describe() + ": " + what + " sends itself " +
                            std::to_string(send_counts[rank_]) + " elements but expects " +
                            std::to_string(recv_counts[rank_]));
  if (send_offsets[size_] == 0 && recv_offsets[size_] == 0) return check_usable(what);
  HORA_RETURN_IF_ERROR(check_device_memory(in, send_offsets[size_] * elem, what + " input"));
  HORA_RETURN_IF_ERROR(check_device_memory(out, recv_offsets[size_] * elem, what + " output"));
  const auto* in_bytes = static_cast<const uint8_t*>(in);
  auto* out_bytes = static_cast<uint8_t*>(out);
  HORA_RETURN_IF_ERROR(run_collective(what, deadline, [&]() -> ncclResult_t {
    ncclResult_t result = api_.group_start();
    for (int p = 0; p < size_ && result == ncclSuccess; ++p) {
      if (send_counts[p] > 0)
        result = api_.send(in_bytes + send_offsets[p] * elem, send_counts[p] * elem, ncclUint8, p,
                           comm_, stream_);
      if (result == ncclSuccess && recv_counts[p] > 0)
        result = api_.recv(out_bytes + recv_offsets[p] * elem, recv_counts[p] * elem, ncclUint8, p,
                           comm_, stream_);
    }
    const ncclResult_t end = api_.group_end();
    return result != ncclSuccess ? result : end;
  }));
  return wait_stream(collective_event_, what, deadline);
}

Status NcclCommunicator::barrier(Deadline deadline) {
  HORA_RETURN_IF_ERROR(run_collective("barrier", deadline, [&] {
    return api_.all_reduce(scratch_, scratch_, 1, ncclInt32, ncclSum, comm_, stream_);
  }));
  return wait_stream(collective_event_, "barrier", deadline);
}

}  // namespace nccl_backend
}  // namespace collectives
}  // namespace hora
