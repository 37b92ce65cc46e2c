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
#include <memory>
#include <string>
#include <vector>

#include "collectives/algorithms/algorithms.h"
#include "collectives/algorithms/ring_common.h"

namespace hora {
namespace collectives {
namespace {

std::string where(const char* phase, size_t segment, int peer) {
  return std::string(" [tree ") + phase + " segment " + std::to_string(segment) + ", peer rank " +
         std::to_string(peer) + "]";
}

// One call's tree (parent, children) and segments, in the words of the schedule above.
struct Tree {
  Communicator& comm;
  const AlgorithmOptions& options;
  const uint8_t* in_bytes;
  uint8_t* out_bytes;
  size_t count;
  DataType dtype;
  ReduceOp op;
  int n;
  int parent;  // -1 on the root
  int children[2];
  int num_children;
  size_t elem;
  size_t seg_elems;
  size_t seg_bytes;
  size_t segments;

  size_t seg_elems_of(size_t j) const { return std::min(seg_elems, count - j * seg_elems); }
};

Tree make_tree(Communicator& comm, const void* in, void* out, size_t count, DataType dtype,
               ReduceOp op, const AlgorithmOptions& options) {
  const int n = comm.size();
  const int r = comm.rank();
  const size_t seg_elems = detail::segment_elems(comm, options, dtype, count);
  Tree t{comm,
         options,
         static_cast<const uint8_t*>(in),
         static_cast<uint8_t*>(out),
         count,
         dtype,
         op,
         n,
         r == 0 ? -1 : (r - 1) / 2,
         {0, 0},
         0,
         data_type_bytes(dtype),
         seg_elems,
         seg_elems * data_type_bytes(dtype),
         detail::segment_count(count, seg_elems)};
  for (int c = 2 * r + 1; c <= 2 * r + 2; ++c) {
    if (c < n) t.children[t.num_children++] = c;
  }
  return t;
}

// Step 1's receives from the children: each child c has a double-buffered scratch slot,
// segment j lands in half j % 2 of it (request child * 2 + j % 2).
struct ChildRecvs {
  uint8_t* slots[2] = {nullptr, nullptr};
  std::array<std::unique_ptr<Request>, 4> recvs;

  const uint8_t* slot(const Tree& t, int c, size_t j) const {
    return slots[c] + (j % 2) * t.seg_bytes;
  }
  Request& request(int c, size_t j) { return *recvs[static_cast<size_t>(c) * 2 + j % 2]; }
  Status post(const Tree& t, int c, size_t j) {
    auto request = t.comm.irecv(t.children[c], slots[c] + (j % 2) * t.seg_bytes,
                                t.seg_elems_of(j) * t.elem, t.options.tag);
    if (!request.ok()) return request.status().with_context(where("reduce", j, t.children[c]));
    recvs[static_cast<size_t>(c) * 2 + j % 2] = std::move(request).value();
    return Status::OK();
  }
};

// Step 1 for segment j: out_j = (in_j op child0_j) op child1_j, reposting each child's slot
// for segment j + 2 once it is read. Sets *result to where segment j's result lies: in_j on
// a leaf, out_j otherwise.
Status reduce_children(const Tree& t, size_t j, ChildRecvs& child, const uint8_t** result) {
  const size_t off = j * t.seg_bytes;
  const size_t elems = t.seg_elems_of(j);
  *result = t.in_bytes + off;
  for (int c = 0; c < t.num_children; ++c) {
    Status status = child.request(c, j).wait(t.options.deadline);
    if (!status.ok()) return status.with_context(where("reduce", j, t.children[c]));
    const uint8_t* own = c == 0 ? t.in_bytes + off : t.out_bytes + off;
    status =
        detail::reduce3(t.comm, t.out_bytes + off, own, child.slot(t, c, j), elems, t.dtype, t.op);
    if (!status.ok()) return status.with_context(where("reduce", j, t.children[c]));
    *result = t.out_bytes + off;
    if (j + 2 < t.segments) HORA_RETURN_IF_ERROR(child.post(t, c, j + 2));
  }
  return Status::OK();
}

// Sends segment j (elems elements at data) to every child, appending the requests to sends.
Status send_to_children(const Tree& t, size_t j, const uint8_t* data,
                        std::vector<std::unique_ptr<Request>>& sends) {
  for (int c = 0; c < t.num_children; ++c) {
    auto sent = t.comm.isend(t.children[c], data, t.seg_elems_of(j) * t.elem, t.options.tag);
    if (!sent.ok()) return sent.status().with_context(where("broadcast", j, t.children[c]));
    sends.push_back(std::move(sent).value());
  }
  return Status::OK();
}

// Steps 1 and 2: reduce up; the root scales for kAverage and starts the broadcast down as
// each segment is reduced. Returns once every upward (root: downward) send has completed, so
// out may then be received into.
Status reduce_up(const Tree& t, ScratchPool& pool) {
  ChildRecvs child;
  for (int c = 0; c < t.num_children; ++c) {
    HORA_ASSIGN_OR_RETURN(child.slots[c], detail::acquire(t.comm, pool, c, 2 * t.seg_bytes));
    for (size_t j = 0; j < t.segments && j < 2; ++j) HORA_RETURN_IF_ERROR(child.post(t, c, j));
  }
  auto& sends = pool.requests(0);
  for (size_t j = 0; j < t.segments; ++j) {
    const size_t off = j * t.seg_bytes;
    const size_t elems = t.seg_elems_of(j);
    const uint8_t* result = nullptr;
    HORA_RETURN_IF_ERROR(reduce_children(t, j, child, &result));
    if (t.parent >= 0) {
      auto sent = t.comm.isend(t.parent, result, elems * t.elem, t.options.tag);
      if (!sent.ok()) return sent.status().with_context(where("reduce", j, t.parent));
      sends.push_back(std::move(sent).value());
    } else {
      if (t.op == ReduceOp::kAverage) {
        HORA_RETURN_IF_ERROR(detail::scale(t.comm, t.out_bytes + off, elems, t.dtype, 1.0 / t.n));
      }
      HORA_RETURN_IF_ERROR(send_to_children(t, j, t.out_bytes + off, sends));
    }
  }
  Status status = detail::wait_all(sends, t.options.deadline);
  if (!status.ok()) {
    return status.with_context(where(t.parent >= 0 ? "reduce" : "broadcast", t.segments - 1,
                                     t.parent >= 0 ? t.parent : t.children[0]));
  }
  return Status::OK();
}

// Step 3 on a non-root rank: receives each segment from the parent straight into out_j (a
// window of kWindow in flight) and forwards it to the children at once.
Status broadcast_down(const Tree& t, ScratchPool& pool) {
  constexpr size_t kWindow = 8;
  std::array<std::unique_ptr<Request>, kWindow> recvs;
  size_t posted = 0;
  auto post_parent = [&]() -> Status {
    auto request = t.comm.irecv(t.parent, t.out_bytes + posted * t.seg_bytes,
                                t.seg_elems_of(posted) * t.elem, t.options.tag);
    if (!request.ok()) return request.status().with_context(where("broadcast", posted, t.parent));
    recvs[posted % kWindow] = std::move(request).value();
    ++posted;
    return Status::OK();
  };
  while (posted < t.segments && posted < kWindow) HORA_RETURN_IF_ERROR(post_parent());
  auto& down = pool.requests(1);
  for (size_t j = 0; j < t.segments; ++j) {
    Status status = recvs[j % kWindow]->wait(t.options.deadline);
    if (!status.ok()) return status.with_context(where("broadcast", j, t.parent));
    if (posted < t.segments) HORA_RETURN_IF_ERROR(post_parent());
    HORA_RETURN_IF_ERROR(send_to_children(t, j, t.out_bytes + j * t.seg_bytes, down));
  }
  Status status = detail::wait_all(down, t.options.deadline);
  if (!status.ok()) return status.with_context(where("broadcast", t.segments - 1, t.children[0]));
  return Status::OK();
}

Status tree_schedule(Communicator& comm, const void* in, void* out, size_t count, DataType dtype,
                     ReduceOp op, const AlgorithmOptions& options, ScratchPool& pool) {
  const Tree t = make_tree(comm, in, out, count, dtype, op, options);
  HORA_RETURN_IF_ERROR(reduce_up(t, pool));
  if (t.parent >= 0) HORA_RETURN_IF_ERROR(broadcast_down(t, pool));
  return Status::OK();
}

}  // namespace

Status tree_allreduce(Communicator& comm, const void* in, void* out, size_t count, DataType dtype,
                      ReduceOp op, const AlgorithmOptions& options) {
  return detail::run_allreduce<tree_schedule>(comm, in, out, count, dtype, op, options,
                                              "tree allreduce");
}

}  // namespace collectives
}  // namespace hora
