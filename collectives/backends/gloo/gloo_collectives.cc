// The Gloo backend's native collectives: each one validates, maps hora's buffers onto gloo's
// options-based collectives (reducescatter is gloo's allreduce, see there), and turns
// exceptions into Status. Reductions call kernels::reduce3/reduce for every dtype (float16
// and bfloat16 included), so gloo and hora's own algorithms combine elements identically; kAverage
// is a gloo sum followed by kernels::scale(1/size) on every rank.
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>

#include <cstring>

#include "collectives/backends/gloo/gloo_communicator_impl.h"
#include "collectives/backends/gloo/gloo_errors.h"
#include "kernels/kernels.h"

namespace hora {
namespace collectives {
namespace gloo_backend {
namespace {

ReduceOp kernel_op(ReduceOp op) { return op == ReduceOp::kAverage ? ReduceOp::kSum : op; }

// Runs a gloo collective with the communicator's checks and error naming.
template <typename F>
Status run(GlooCommunicator& comm, const std::string& what, F&& f) {
  HORA_RETURN_IF_ERROR(comm.check_usable(what.c_str()));
  Status status = gloo_call(comm.describe() + ": " + what, std::forward<F>(f));
  if (status.ok()) return status;
  // gloo's timeout names no pair; at two ranks the collective can only have waited on the
  // other rank (a stopped or stalled peer), so name it as a p2p wait would.
  if (status.code() == StatusCode::kTimeout && comm.size() == 2) {
    status = Status(status.code(), status.message() + " (waiting on the peer, rank " +
                                       std::to_string(1 - comm.rank()) + ")");
    comm.record_failed(1 - comm.rank(), status);
  }
  return comm.mark_broken(status);
}

Status check_counts(const GlooCommunicator& comm, const char* what,
                    const std::vector<size_t>& counts) {
  if (counts.size() != static_cast<size_t>(comm.size()))
    return Status::invalid_argument(std::string("gloo: ") + comm.describe() + ": " + what +
                                    " got " + std::to_string(counts.size()) + " counts for " +
                                    std::to_string(comm.size()) + " ranks");
  return Status::OK();
}

// gloo's typed entry points only use sizeof(T): pick an unsigned type of the dtype's width.
template <typename F>
void with_width(DataType dtype, F&& f) {
  switch (data_type_bytes(dtype)) {
    case 1: f(uint8_t{}); break;
    case 2: f(uint16_t{}); break;
    case 4: f(uint32_t{}); break;
    default: f(uint64_t{}); break;
  }
}

}  // namespace

Status GlooCommunicator::allreduce(const void* in, void* out, size_t count, DataType dtype,
                                   ReduceOp op, Deadline deadline) {
  const size_t bytes = count * data_type_bytes(dtype);
  HORA_RETURN_IF_ERROR(check_reduce_op(op, dtype, "gloo: " + describe() + ": allreduce"));
  HORA_RETURN_IF_ERROR(check_usable("allreduce"));
  if (in != out && bytes > 0) std::memmove(out, in, bytes);
  if (count == 0 || size() == 1) return Status::OK();  // kAverage over 1 rank: x * 1 = x
  const uint32_t tag = next_collective_tag();
  HORA_RETURN_IF_ERROR(
      run(*this,
          std::string("allreduce ") + data_type_name(dtype) + " " + reduce_op_name(op) + " of " +
              std::to_string(count),
          [&] {
            ::gloo::AllreduceOptions opts(context());
            with_width(dtype, [&](auto t) {
              using T = decltype(t);
              opts.setOutput(static_cast<T*>(out), count);
            });
            const ReduceOp kop = kernel_op(op);
            opts.setReduceFunction([dtype, kop](void* dst, const void* a, const void* b, size_t n) {
              kernels::reduce3(dst, a, b, n, dtype, kop);
            });
            opts.setAlgorithm(options_.allreduce_bcube ? ::gloo::AllreduceOptions::Algorithm::BCUBE
                                                       : ::gloo::AllreduceOptions::Algorithm::RING);
            opts.setTag(tag);
            opts.setTimeout(timeout_for(deadline));
            ::gloo::allreduce(opts);
          }));
  if (op == ReduceOp::kAverage) kernels::scale(out, count, dtype, 1.0 / size());
  return Status::OK();
}

Status GlooCommunicator::allgatherv(const void* in, void* out, const std::vector<size_t>& counts,
                                    DataType dtype, Deadline deadline) {
  HORA_RETURN_IF_ERROR(check_counts(*this, "allgatherv", counts));
  const size_t elem = data_type_bytes(dtype);
  std::vector<size_t> byte_counts;
  size_t offset = 0, total = 0;
  for (int r = 0; r < size(); ++r) {
    if (r == rank()) offset = total;
    byte_counts.push_back(counts[r] * elem);
    total += counts[r] * elem;
  }
  uint8_t* out_bytes = static_cast<uint8_t*>(out);
  const bool in_place = in == out_bytes + offset;
  if (size() == 1 || total == 0) {
    HORA_RETURN_IF_ERROR(check_usable("allgatherv"));
    if (!in_place && byte_counts[rank()] > 0)
      std::memmove(out_bytes + offset, in, byte_counts[rank()]);
    return Status::OK();
  }
  const uint32_t tag = next_collective_tag();
  return run(*this, "allgatherv of " + std::to_string(total) + " bytes", [&] {
    ::gloo::AllgathervOptions opts(context());
    if (!in_place) opts.setInput(static_cast<uint8_t*>(const_cast<void*>(in)), byte_counts[rank()]);
    opts.setOutput(out_bytes, byte_counts);
    opts.setTag(tag);
    opts.setTimeout(timeout_for(deadline));
    ::gloo::allgatherv(opts);
  });
}

Status GlooCommunicator::broadcast(void* buf, size_t count, DataType dtype, int root,
                                   Deadline deadline) {
  if (root < 0 || root >= size())
    return Status::invalid_argument("gloo: " + describe() + ": broadcast root " +
                                    std::to_string(root) + " is not in [0, " +
                                    std::to_string(size()) + ")");
  HORA_RETURN_IF_ERROR(check_usable("broadcast"));
  const size_t bytes = count * data_type_bytes(dtype);
  if (bytes == 0 || size() == 1) return Status::OK();
  const uint32_t tag = next_collective_tag();
  return run(*this,
             "broadcast of " + std::to_string(bytes) + " bytes from root " + std::to_string(root),
             [&] {
               ::gloo::BroadcastOptions opts(context());
               opts.setOutput(static_cast<uint8_t*>(buf), bytes);
               opts.setRoot(root);
               opts.setTag(tag);
               opts.setTimeout(timeout_for(deadline));
               ::gloo::broadcast(opts);
             });
}

Status GlooCommunicator::alltoallv(const void* in, const std::vector<size_t>& send_counts,
                                   void* out, const std::vector<size_t>& recv_counts,
                                   DataType dtype, Deadline deadline) {
  HORA_RETURN_IF_ERROR(check_counts(*this, "alltoallv send_counts", send_counts));
  HORA_RETURN_IF_ERROR(check_counts(*this, "alltoallv recv_counts", recv_counts));
  const size_t elem = data_type_bytes(dtype);
  std::vector<int64_t> send_bytes, recv_bytes;
  int64_t send_total = 0, recv_total = 0;
  for (int r = 0; r < size(); ++r) {
    send_bytes.push_back(static_cast<int64_t>(send_counts[r] * elem));
    recv_bytes.push_back(static_cast<int64_t>(recv_counts[r] * elem));
    send_total += send_bytes.back();
    recv_total += recv_bytes.back();
  }
  if (size() == 1) {
    HORA_RETURN_IF_ERROR(check_usable("alltoallv"));
    if (send_bytes[0] != recv_bytes[0])
      return Status::invalid_argument("gloo: alltoallv on 1 rank sends " +
                                      std::to_string(send_bytes[0]) + " bytes but receives " +
                                      std::to_string(recv_bytes[0]));
    if (send_bytes[0] > 0 && in != out) std::memmove(out, in, send_bytes[0]);
    return Status::OK();
  }
  const uint32_t tag = next_collective_tag();
  return run(*this, "alltoallv", [&] {
    ::gloo::AlltoallvOptions opts(context());
    opts.setInput(send_total > 0 ? static_cast<uint8_t*>(const_cast<void*>(in)) : empty_buffer(),
                  send_bytes);
    opts.setOutput(recv_total > 0 ? static_cast<uint8_t*>(out) : empty_buffer(), recv_bytes);
    opts.setTag(tag);
    opts.setTimeout(timeout_for(deadline));
    ::gloo::alltoallv(opts);
  });
}

Status GlooCommunicator::reducescatter(const void* in, void* out,
                                       const std::vector<size_t>& recv_counts, DataType dtype,
                                       ReduceOp op, Deadline deadline) {
  HORA_RETURN_IF_ERROR(check_reduce_op(op, dtype, "gloo: " + describe() + ": reducescatter"));
  HORA_RETURN_IF_ERROR(check_counts(*this, "reducescatter", recv_counts));
  HORA_RETURN_IF_ERROR(check_usable("reducescatter"));
  const size_t elem = data_type_bytes(dtype);
  size_t total = 0;
  for (size_t c : recv_counts) total += c;
  const size_t mine = recv_counts[rank()] * elem;
  if (total == 0) return Status::OK();
  if (size() == 1) {
    if (out != in) std::memmove(out, in, mine);
    return Status::OK();
  }
  // gloo's own reduce-scatter (ReduceScatterHalvingDoubling) is not used: with a rank count
  // that is not a power of two, the ranks of the smaller binary block return while their
  // sends to the larger block may still be queued, reading the caller's buffer, so a peer can
  // reduce bytes that the next call has already overwritten (seen with 3 ranks under load).
  // As PyTorch's gloo process group does, reduce-scatter is gloo's allreduce, which honours
  // the tag and the deadline, over a working copy; this rank keeps its block.
  std::vector<uint8_t>& work = scratch();
  if (work.size() < total * elem) work.resize(total * elem);
  HORA_RETURN_IF_ERROR(allreduce(in, work.data(), total, dtype, kernel_op(op), deadline));
  size_t offset = 0;
  for (int r = 0; r < rank(); ++r) offset += recv_counts[r];
  if (mine > 0) std::memmove(out, work.data() + offset * elem, mine);
  if (op == ReduceOp::kAverage && mine > 0)
    kernels::scale(out, recv_counts[rank()], dtype, 1.0 / size());
  return Status::OK();
}

Status GlooCommunicator::barrier(Deadline deadline) {
  HORA_RETURN_IF_ERROR(check_usable("barrier"));
  if (size() == 1) return Status::OK();
  const uint32_t tag = next_collective_tag();
  return run(*this, "barrier", [&] {
    ::gloo::BarrierOptions opts(context());
    opts.setTag(tag);
    opts.setTimeout(timeout_for(deadline));
    ::gloo::barrier(opts);
  });
}

}  // namespace gloo_backend
}  // namespace collectives
}  // namespace hora
