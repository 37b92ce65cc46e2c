// Tree allreduce: a pipelined binary tree, reduce up then broadcast down, in segments.
//
// Tree: rank 0 is the root; rank r has parent (r - 1) / 2 and children 2r + 1, 2r + 2 (those
// below n). Depth is floor(log2 n). The buffer is split into segments of seg_elems elements
// (segment_bytes / element size); one segment is one message.
//   1. Reduce up, segments j = 0 .. m-1: a rank receives segment j from each child into a
//      double-buffered scratch slot per child (segment j + 2 is posted as soon as segment j's
//      slot is free), computes out_j = (in_j op child0_j) op child1_j, and sends out_j to its
//      parent at once; a leaf sends in_j itself. Segments pipeline up the tree: the root
//      finishes after about depth + m segment times, not depth * m.
//   2. The root scales out_j by 1/n for kAverage and sends it to its children as soon as it
//      is reduced.
//   3. Broadcast down: every other rank receives segment j from its parent straight into
//      out_j (a window of 8 in flight) and forwards it to its children at once.
//
// Determinism: each element is reduced in an order fixed by the tree shape (own value, then
// the left subtree, then the right one), the final bits are computed once on the root, and
// the broadcast copies them, so every rank holds identical bits and a rerun reproduces them.
//
// Why one binary tree and not NCCL's double binary tree: the double tree halves the bytes
// each tree carries and keeps every rank's send and receive links busy, which pays when the
// tree is the bandwidth path across many nodes. In hora the tree serves mid-size messages
// on a few ranks (the ring takes the large ones, the selector decides), where the latency of
// log2(n) hops, not link bandwidth, is the cost, and one tree is half the schedule to get
// right. Worth revisiting if hora-bench on many hosts shows mid sizes link-bound.
//
// In place (in == out) works: an interior rank only writes out_j by the reduction that reads
// in_j (exact aliasing), and all upward sends complete before any broadcast receive lands.
#include <algorithm>
#include <array>
#include <string>

#include "collectives/algorithms/algorithms.h"
#include "collectives/algorithms/ring_common.h"

namespace hora {
namespace collectives {
namespace {

std::string where(const char* phase, size_t segment, int peer) {
  return std::string(" [tree ") + phase + " segment " + std::to_string(segment) + ", peer rank " +
         std::to_string(peer) + "]";
}

}  // namespace

Status tree_allreduce(Communicator& comm, const void* in, void* out, size_t count, DataType dtype,
                      ReduceOp op, const AlgorithmOptions& options) {
  HORA_RETURN_IF_ERROR(check_reduce_op(op, dtype, "tree allreduce"));
  if (count == 0) return Status::OK();
  const int n = comm.size();
  if (n == 1) {
    HORA_RETURN_IF_ERROR(detail::copy_if_distinct(comm, in, out, count, dtype));
    return detail::finish(comm, options.deadline);
  }
  ScratchPool local_pool;
  ScratchPool& pool = options.scratch != nullptr ? *options.scratch : local_pool;

  const int r = comm.rank();
  const int parent = r == 0 ? -1 : (r - 1) / 2;
  int children[2];
  int num_children = 0;
  for (int c = 2 * r + 1; c <= 2 * r + 2; ++c) {
    if (c < n) children[num_children++] = c;
  }
  const size_t elem = data_type_bytes(dtype);
  const size_t seg_elems = detail::segment_elems(comm, options, dtype, count);
  const size_t seg_bytes = seg_elems * elem;
  const size_t segments = detail::segment_count(count, seg_elems);
  const auto* in_bytes = static_cast<const uint8_t*>(in);
  auto* out_bytes = static_cast<uint8_t*>(out);
  auto seg_elems_of = [&](size_t j) { return std::min(seg_elems, count - j * seg_elems); };

  // 1. Reduce up (and, on the root, 2. send down as soon as reduced).
  uint8_t* child_slots[2] = {nullptr, nullptr};
  std::array<std::unique_ptr<Request>, 4> child_recvs;  // [child * 2 + j % 2]
  auto post_child = [&](int c, size_t j) -> Status {
    auto request = comm.irecv(children[c], child_slots[c] + (j % 2) * seg_bytes,
                              seg_elems_of(j) * elem, options.tag);
    if (!request.ok()) return request.status().with_context(where("reduce", j, children[c]));
    child_recvs[static_cast<size_t>(c) * 2 + j % 2] = std::move(request).value();
    return Status::OK();
  };
  for (int c = 0; c < num_children; ++c) {
    HORA_ASSIGN_OR_RETURN(child_slots[c], detail::acquire(comm, pool, c, 2 * seg_bytes));
    for (size_t j = 0; j < segments && j < 2; ++j) HORA_RETURN_IF_ERROR(post_child(c, j));
  }
  auto& sends = pool.requests(0);
  for (size_t j = 0; j < segments; ++j) {
    const size_t off = j * seg_bytes;
    const size_t elems = seg_elems_of(j);
    const uint8_t* result = in_bytes + off;
    for (int c = 0; c < num_children; ++c) {
      Status status = child_recvs[static_cast<size_t>(c) * 2 + j % 2]->wait(options.deadline);
      if (!status.ok()) return status.with_context(where("reduce", j, children[c]));
      const uint8_t* slot = child_slots[c] + (j % 2) * seg_bytes;
      status =
          c == 0 ? detail::reduce3(comm, out_bytes + off, in_bytes + off, slot, elems, dtype, op)
                 : detail::reduce3(comm, out_bytes + off, out_bytes + off, slot, elems, dtype, op);
      if (!status.ok()) return status.with_context(where("reduce", j, children[c]));
      result = out_bytes + off;
      if (j + 2 < segments) HORA_RETURN_IF_ERROR(post_child(c, j + 2));
    }
    if (parent >= 0) {
      auto sent = comm.isend(parent, result, elems * elem, options.tag);
      if (!sent.ok()) return sent.status().with_context(where("reduce", j, parent));
      sends.push_back(std::move(sent).value());
    } else {
      if (op == ReduceOp::kAverage)
        HORA_RETURN_IF_ERROR(detail::scale(comm, out_bytes + off, elems, dtype, 1.0 / n));
      for (int c = 0; c < num_children; ++c) {
        auto sent = comm.isend(children[c], out_bytes + off, elems * elem, options.tag);
        if (!sent.ok()) return sent.status().with_context(where("broadcast", j, children[c]));
        sends.push_back(std::move(sent).value());
      }
    }
  }
  // Upward sends (and the root's downward ones) must finish before out is received into.
  Status status = detail::wait_all(sends, options.deadline);
  if (!status.ok()) {
    return status.with_context(where(parent >= 0 ? "reduce" : "broadcast", segments - 1,
                                     parent >= 0 ? parent : children[0]));
  }
  if (parent < 0) return detail::finish(comm, options.deadline);

  // 3. Broadcast down.
  constexpr size_t kWindow = 8;
  std::array<std::unique_ptr<Request>, kWindow> recvs;
  size_t posted = 0;
  auto post_parent = [&]() -> Status {
    auto request = comm.irecv(parent, out_bytes + posted * seg_bytes, seg_elems_of(posted) * elem,
                              options.tag);
    if (!request.ok()) return request.status().with_context(where("broadcast", posted, parent));
    recvs[posted % kWindow] = std::move(request).value();
    ++posted;
    return Status::OK();
  };
  while (posted < segments && posted < kWindow) HORA_RETURN_IF_ERROR(post_parent());
  auto& down = pool.requests(1);
  for (size_t j = 0; j < segments; ++j) {
    status = recvs[j % kWindow]->wait(options.deadline);
    if (!status.ok()) return status.with_context(where("broadcast", j, parent));
    if (posted < segments) HORA_RETURN_IF_ERROR(post_parent());
    for (int c = 0; c < num_children; ++c) {
      auto sent =
          comm.isend(children[c], out_bytes + j * seg_bytes, seg_elems_of(j) * elem, options.tag);
      if (!sent.ok()) return sent.status().with_context(where("broadcast", j, children[c]));
      down.push_back(std::move(sent).value());
    }
  }
  status = detail::wait_all(down, options.deadline);
  if (!status.ok()) return status.with_context(where("broadcast", segments - 1, children[0]));
  return detail::finish(comm, options.deadline);
}

}  // namespace collectives
}  // namespace hora
