// MpiCommunicator's native collectives: MPI-3 nonblocking collectives finished by
// poll_request(), so the deadline and abort() hold (see mpi_communicator.h).
#include <algorithm>
#include <cstring>
#include <string>

#include "collectives/backends/mpi/mpi_communicator.h"
#include "collectives/backends/mpi/mpi_request.h"
#include "collectives/backends/mpi/mpi_status.h"
#include "collectives/failed_ranks.h"
#include "kernels/kernels.h"

namespace hora {
namespace collectives {

using mpi_backend::mpi_status;
using mpi_backend::poll_request;

namespace {

const void* in_place_or(const void* in, const void* out) { return in == out ? MPI_IN_PLACE : in; }

std::string collective_name(const char* what, DataType dtype, size_t count) {
  return std::string(what) + " of " + std::to_string(count) + " " + data_type_name(dtype) +
         " elements";
}

}  // namespace

Status MpiCommunicator::finish_collective(MPI_Request request, const std::string& what,
                                          Deadline deadline) {
  MPI_Status status;
  auto describe_wait = [&] {
    return describe() + ": " + what + " (waiting for the other ranks of " + std::to_string(size_) +
           " to join)";
  };
  // Every rank takes part: one known failed (collectives/failed_ranks.h) never joins.
  auto known_failure = [this](Deadline::Clock::duration waited) {
    return FailedRanks::process().check_collective(options_.members, size_, rank_, waited);
  };
  Status result = poll_request(&request, &status, deadline, aborted_, describe_wait, known_failure);
  // A collective cannot be cancelled: after any failure it may still be pending in MPI.
  if (!result.ok() && broken_.ok()) broken_ = result;
  return result;
}

Status MpiCommunicator::check_counts(const std::vector<size_t>& counts, const char* what,
                                     const char* name, std::vector<int>* ints,
                                     std::vector<int>* displs) const {
  if (counts.size() != static_cast<size_t>(size_))
    return Status::invalid_argument("mpi: " + describe() + ": " + what + ": " + name + " has " +
                                    std::to_string(counts.size()) + " entries for " +
                                    std::to_string(size_) + " ranks");
  ints->resize(counts.size());
  displs->resize(counts.size());
  size_t total = 0;
  for (size_t p = 0; p < counts.size(); ++p) {
    (*displs)[p] = static_cast<int>(total);
    total += counts[p];
    if (total > static_cast<size_t>(options_.max_count_per_call))
      return Status::unimplemented(
          "mpi: " + describe() + ": " + what + ": " + name + " adds up to more than " +
          std::to_string(options_.max_count_per_call) +
          " elements, the limit of MPI-3's int counts and displacements; split the tensor "
          "or use one of hora's algorithms (HORA_ALLREDUCE_ALGO=ring)");
    (*ints)[p] = static_cast<int>(counts[p]);
  }
  return Status::OK();
}

Status MpiCommunicator::allreduce(const void* in, void* out, size_t count, DataType dtype,
                                  ReduceOp op, Deadline deadline) {
  HORA_RETURN_IF_ERROR(check_reduce_op(op, dtype, "mpi: " + describe() + ": allreduce"));
  HORA_RETURN_IF_ERROR(check_usable("allreduce"));
  const size_t esize = data_type_bytes(dtype);
  const size_t chunk = static_cast<size_t>(options_.max_count_per_call);
  for (size_t offset = 0; offset < count; offset += chunk) {
    const size_t n = std::min(chunk, count - offset);
    const void* send = in == out ? MPI_IN_PLACE : static_cast<const char*>(in) + offset * esize;
    void* recv = static_cast<char*>(out) + offset * esize;
    MPI_Request request = MPI_REQUEST_NULL;
    const std::string what = collective_name("MPI_Iallreduce", dtype, n) + " (" +
                             reduce_op_name(op) + ", offset " + std::to_string(offset) + ")";
    HORA_RETURN_IF_ERROR(
        mpi_status(MPI_Iallreduce(send, recv, static_cast<int>(n), types_.datatype(dtype),
                                  types_.op(dtype, op), comm_, &request),
                   describe() + ": " + what));
    HORA_RETURN_IF_ERROR(finish_collective(request, what, deadline));
  }
  if (op == ReduceOp::kAverage && count > 0) kernels::scale(out, count, dtype, 1.0 / size_);
  return Status::OK();
}

Status MpiCommunicator::allgatherv(const void* in, void* out, const std::vector<size_t>& counts,
                                   DataType dtype, Deadline deadline) {
  HORA_RETURN_IF_ERROR(check_usable("allgatherv"));
  HORA_RETURN_IF_ERROR(check_counts(counts, "allgatherv", "counts", &ints_a_, &ints_b_));
  const size_t esize = data_type_bytes(dtype);
  char* slot = static_cast<char*>(out) + static_cast<size_t>(ints_b_[rank_]) * esize;
  const void* send = in;
  if (in == slot) {
    send = MPI_IN_PLACE;
  } else if (in == out) {
    // hora's "in place" (in == out): this rank's block sits at the start; MPI's in-place
    // form wants it at its own displacement.
    std::memmove(slot, in, counts[rank_] * esize);
    send = MPI_IN_PLACE;
  }
  const std::string what = collective_name("MPI_Iallgatherv", dtype, counts[rank_]);
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Datatype type = types_.datatype(dtype);
  HORA_RETURN_IF_ERROR(mpi_status(MPI_Iallgatherv(send, ints_a_[rank_], type, out, ints_a_.data(),
                                                  ints_b_.data(), type, comm_, &request),
                                  describe() + ": " + what));
  return finish_collective(request, what, deadline);
}

Status MpiCommunicator::broadcast(void* buf, size_t count, DataType dtype, int root,
                                  Deadline deadline) {
  HORA_RETURN_IF_ERROR(check_usable("broadcast"));
  if (root < 0 || root >= size_)
    return Status::invalid_argument("mpi: " + describe() + ": broadcast root " +
                                    std::to_string(root) + " is outside [0, " +
                                    std::to_string(size_) + ")");
  const size_t esize = data_type_bytes(dtype);
  const size_t chunk = static_cast<size_t>(options_.max_count_per_call);
  for (size_t offset = 0; offset < count; offset += chunk) {
    const size_t n = std::min(chunk, count - offset);
    const std::string what = collective_name("MPI_Ibcast", dtype, n) + " from root " +
                             std::to_string(root) + " (offset " + std::to_string(offset) + ")";
    MPI_Request request = MPI_REQUEST_NULL;
    HORA_RETURN_IF_ERROR(
        mpi_status(MPI_Ibcast(static_cast<char*>(buf) + offset * esize, static_cast<int>(n),
                              types_.datatype(dtype), root, comm_, &request),
                   describe() + ": " + what));
    HORA_RETURN_IF_ERROR(finish_collective(request, what, deadline));
  }
  return Status::OK();
}

Status MpiCommunicator::alltoallv(const void* in, const std::vector<size_t>& send_counts, void* out,
                                  const std::vector<size_t>& recv_counts, DataType dtype,
                                  Deadline deadline) {
  HORA_RETURN_IF_ERROR(check_usable("alltoallv"));
  HORA_RETURN_IF_ERROR(check_counts(send_counts, "alltoallv", "send_counts", &ints_a_, &ints_b_));
  HORA_RETURN_IF_ERROR(check_counts(recv_counts, "alltoallv", "recv_counts", &ints_c_, &ints_d_));
  const size_t esize = data_type_bytes(dtype);
  if (in == out) {
    // MPI's in-place alltoallv needs equal send and receive layouts; stage the input instead.
    size_t bytes = 0;
    for (size_t c : send_counts) bytes += c * esize;
    staging_.resize(bytes);
    if (bytes > 0) std::memcpy(staging_.data(), in, bytes);
    in = staging_.data();
  }
  const std::string what = collective_name("MPI_Ialltoallv", dtype, send_counts[rank_]);
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Datatype type = types_.datatype(dtype);
  HORA_RETURN_IF_ERROR(
      mpi_status(MPI_Ialltoallv(in, ints_a_.data(), ints_b_.data(), type, out, ints_c_.data(),
                                ints_d_.data(), type, comm_, &request),
                 describe() + ": " + what));
  return finish_collective(request, what, deadline);
}

Status MpiCommunicator::reducescatter(const void* in, void* out,
                                      const std::vector<size_t>& recv_counts, DataType dtype,
                                      ReduceOp op, Deadline deadline) {
  HORA_RETURN_IF_ERROR(check_reduce_op(op, dtype, "mpi: " + describe() + ": reducescatter"));
  HORA_RETURN_IF_ERROR(check_usable("reducescatter"));
  HORA_RETURN_IF_ERROR(
      check_counts(recv_counts, "reducescatter", "recv_counts", &ints_a_, &ints_b_));
  // in == out: MPI_IN_PLACE takes the input from `out` (all blocks) and leaves this rank's
  // block at its start.
  const std::string what = collective_name("MPI_Ireduce_scatter", dtype, recv_counts[rank_]) +
                           " (" + reduce_op_name(op) + ")";
  MPI_Request request = MPI_REQUEST_NULL;
  HORA_RETURN_IF_ERROR(
      mpi_status(MPI_Ireduce_scatter(in_place_or(in, out), out, ints_a_.data(),
                                     types_.datatype(dtype), types_.op(dtype, op), comm_, &request),
                 describe() + ": " + what));
  HORA_RETURN_IF_ERROR(finish_collective(request, what, deadline));
  if (op == ReduceOp::kAverage && recv_counts[rank_] > 0)
    kernels::scale(out, recv_counts[rank_], dtype, 1.0 / size_);
  return Status::OK();
}

Status MpiCommunicator::barrier(Deadline deadline) {
  HORA_RETURN_IF_ERROR(check_usable("barrier"));
  MPI_Request request = MPI_REQUEST_NULL;
  HORA_RETURN_IF_ERROR(mpi_status(MPI_Ibarrier(comm_, &request), describe() + ": MPI_Ibarrier"));
  return finish_collective(request, "MPI_Ibarrier", deadline);
}

}  // namespace collectives
}  // namespace hora
