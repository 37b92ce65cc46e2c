// Pipelined broadcast along a chain.
//
// Schedule, n ranks, root: ranks are ordered by virtual rank v = (r - root) mod n, so the root
// is v = 0 and rank v receives from v - 1 and sends to v + 1 (the last one only receives). The
// buffer is split into segments of segment_bytes; the root sends every segment at once
// (async), every other rank receives segment j straight into out (8 in flight) and forwards it
// as soon as it lands. The last rank is done after about (n - 1) + m segment times for m
// segments, so a large buffer moves at link speed whatever n is; each rank sends the buffer
// once. For small buffers on many ranks a binomial tree (log2 n hops) would be faster; not
// built, since on one host's few ranks the chain's n - 1 hops cost a few microseconds.
//
// Determinism: a pure copy of the root's bytes.
#include <algorithm>
#include <array>
#include <string>

#include "collectives/algorithms/algorithms.h"
#include "collectives/algorithms/ring_common.h"

namespace hora {
namespace collectives {
namespace {

std::string where(size_t segment, int peer) {
  return " [broadcast segment " + std::to_string(segment) + ", peer rank " + std::to_string(peer) +
         "]";
}

}  // namespace

Status pipelined_broadcast(Communicator& comm, const void* in, void* out, size_t count,
                           DataType dtype, int root, const AlgorithmOptions& options) {
  const int n = comm.size();
  const int r = comm.rank();
  if (root < 0 || root >= n) {
    return Status::invalid_argument("broadcast on rank " + std::to_string(r) + ": root " +
                                    std::to_string(root) + " is not a rank of a group of " +
                                    std::to_string(n));
  }
  if (count == 0) return Status::OK();
  if (r == root) HORA_RETURN_IF_ERROR(detail::copy_if_distinct(comm, in, out, count, dtype));
  if (n == 1) return detail::finish(comm, options.deadline);
  ScratchPool local_pool;
  ScratchPool& pool = detail::scratch_pool(options, local_pool);

  const int v = (r - root + n) % n;
  const int prev = (r - 1 + n) % n;
  const int next = (r + 1) % n;
  const bool has_next = v < n - 1;
  const size_t elem = data_type_bytes(dtype);
  const size_t seg_elems = detail::segment_elems(comm, options, dtype, count);
  const size_t seg_bytes = seg_elems * elem;
  const size_t segments = detail::segment_count(count, seg_elems);
  auto seg_len = [&](size_t j) { return std::min(seg_elems, count - j * seg_elems) * elem; };
  auto* out_bytes = static_cast<uint8_t*>(out);
  auto& sends = pool.requests(0);

  if (v == 0) {
    for (size_t j = 0; j < segments; ++j) {
      auto sent = comm.isend(next, out_bytes + j * seg_bytes, seg_len(j), options.tag);
      if (!sent.ok()) return sent.status().with_context(where(j, next));
      sends.push_back(std::move(sent).value());
    }
  } else {
    constexpr size_t kWindow = 8;
    std::array<std::unique_ptr<Request>, kWindow> recvs;
    size_t posted = 0;
    auto post = [&]() -> Status {
      auto request = comm.irecv(prev, out_bytes + posted * seg_bytes, seg_len(posted), options.tag);
      if (!request.ok()) return request.status().with_context(where(posted, prev));
      recvs[posted % kWindow] = std::move(request).value();
      ++posted;
      return Status::OK();
    };
    while (posted < segments && posted < kWindow) HORA_RETURN_IF_ERROR(post());
    for (size_t j = 0; j < segments; ++j) {
      Status status = recvs[j % kWindow]->wait(options.deadline);
      if (!status.ok()) return status.with_context(where(j, prev));
      if (posted < segments) HORA_RETURN_IF_ERROR(post());
      if (has_next) {
        auto sent = comm.isend(next, out_bytes + j * seg_bytes, seg_len(j), options.tag);
        if (!sent.ok()) return sent.status().with_context(where(j, next));
        sends.push_back(std::move(sent).value());
      }
    }
  }
  Status status = detail::wait_all(sends, options.deadline);
  if (!status.ok()) return status.with_context(where(segments - 1, next));
  return detail::finish(comm, options.deadline);
}

}  // namespace collectives
}  // namespace hora
