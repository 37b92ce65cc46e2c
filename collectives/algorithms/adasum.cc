// Adasum allreduce (Maleki et al., "Scaling Distributed Training with Adaptive Summation",
// MLSys 2021): the ranks' vectors combined pairwise by the Adasum rule (kernels/adasum.h) along
// a binary tree, per tensor of a fused buffer. Any rank count.
//
// Schedule, n ranks, p = the largest power of two <= n, extra = n - p:
//   1. Fold in: for r < 2 * extra, even r sends its whole buffer to r + 1 and sits out; odd r
//      computes adasum(x_{r-1}, x_r) per tensor (dot products over the whole tensors) into
//      its buffer. The p remaining ranks get ids as in recursive doubling (id = r / 2 for odd
//      r < 2 * extra, r - extra for r >= 2 * extra).
//   2. Vector halving, distance doubling, levels L = 1, 2, .., p / 2: id and id ^ L hold the
//      same range [lo, hi) of their halves' partial results; the lower id keeps [lo, mid),
//      the higher [mid, hi) (mid = lo + (hi - lo) / 2), and each sends the other its half of
//      the range. Each rank then holds, for its kept range, the lower half's vector A and the
//      higher half's B (the exchange runs in segments, each one's dot products taken as it
//      lands). The group of 2L ids that share the bits above L holds A and B
//      between them, each rank a distinct piece: per tensor, the rank's partial a.b, |a|^2,
//      |b|^2 over its piece are summed over the group (recursive doubling at distances 1 .. L
//      of 3 float64 per tensor, the lower id's operand first), so every rank of the group
//      applies the coefficients of whole tensors, and combines its piece.
//   3. Distance halving, levels L = p / 2 .. 1: id and id ^ L exchange their ranges, so each
//      rank ends with the whole result.
//   4. Fold out: odd r < 2 * extra sends the result to r - 1.
// The tree: ((x0 x1)(x2 x3))... for powers of two; with extra ranks, pairs (x_{2i}, x_{2i+1})
// for i < extra are combined first and stand as one leaf each. Every element of the result is
// computed by one rank and copied to the others, and the group sums run in an order fixed by
// the rank count, so every rank holds bitwise identical results.
//
// Cost: the bytes of a reduce-scatter plus an allgather by halving / doubling (2 (p - 1) / p
// of the buffer sent per rank, as the ring), two passes over each kept piece (dot products,
// combine), and log2(p) (log2(p) + 1) / 2 small exchanges of 24 bytes per tensor.
#include "kernels/adasum.h"

#include <algorithm>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "collectives/algorithms/algorithms.h"
#include "collectives/algorithms/buffer_access.h"
#include "collectives/algorithms/ring_common.h"
#include "kernels/kernels.h"

namespace hora {
namespace collectives {
namespace {

constexpr const char* kName = "adasum allreduce";

// One call's layout: the tensors' element offsets in the buffer and the scratch it uses.
struct AdasumRun {
  Communicator& comm;
  const AlgorithmOptions& options;
  DataType dtype;
  size_t elem;
  std::vector<size_t> bounds;  // tensor t spans [bounds[t], bounds[t + 1])
  uint8_t* out;                // this rank's buffer (whole length)
  uint8_t* other;              // the partner's data, at the same offsets
  double* dots;                // 3 per tensor: a.b, |a|^2, |b|^2
  double* peer_dots;           // a group member's, during the group sum

  size_t tensors() const { return bounds.size() - 1; }
  size_t total() const { return bounds.back(); }
  uint8_t* at(uint8_t* base, size_t element) const { return base + element * elem; }
};

// Adds the dot products of [lo, hi) (a: the lower id's data, b: the higher's) to dots, per
// tensor.
void piece_dots(const AdasumRun& run, const uint8_t* a, const uint8_t* b, size_t lo, size_t hi) {
  for (size_t t = 0; t < run.tensors(); ++t) {
    const size_t begin = std::max(lo, run.bounds[t]), end = std::min(hi, run.bounds[t + 1]);
    if (begin >= end) continue;
    kernels::AdasumDots d;
    kernels::adasum_dots(a + (begin - lo) * run.elem, b + (begin - lo) * run.elem, end - begin,
                         run.dtype, &d);
    run.dots[3 * t] += d.ab;
    run.dots[3 * t + 1] += d.aa;
    run.dots[3 * t + 2] += d.bb;
  }
}

void clear_dots(const AdasumRun& run) { std::fill(run.dots, run.dots + 3 * run.tensors(), 0.0); }

// A halving level's exchange with `peer` in segments of options.segment_bytes: every receive
// and send posted at once, and each received segment's dot products taken as it lands, so the
// arithmetic overlaps the transfer. Both sides cut the range the same way (this rank's kept
// range is the peer's sent range). The dot products are summed segment by segment, an order
// fixed by the range and the segment size.
Status exchange_with_dots(const AdasumRun& run, int peer, size_t send_lo, size_t send_hi,
                          size_t keep_lo, size_t keep_hi, bool lower, int level) {
  const size_t seg = std::max<size_t>(1, run.options.segment_bytes / run.elem);
  auto context = [&](const char* what) {
    return std::string(" [") + kName + " halving level " + std::to_string(level) + ", " + what +
           " rank " + std::to_string(peer) + "]";
  };
  std::vector<std::unique_ptr<Request>> recvs, sends;
  recvs.reserve((keep_hi - keep_lo) / seg + 1);
  sends.reserve((send_hi - send_lo) / seg + 1);
  for (size_t lo = keep_lo; lo < keep_hi; lo += seg) {
    auto r = run.comm.irecv(peer, run.at(run.other, lo), (std::min(seg, keep_hi - lo)) * run.elem,
                            run.options.tag);
    if (!r.ok()) return r.status().with_context(context("from"));
    recvs.push_back(std::move(r).value());
  }
  for (size_t lo = send_lo; lo < send_hi; lo += seg) {
    auto r = run.comm.isend(peer, run.at(run.out, lo), (std::min(seg, send_hi - lo)) * run.elem,
                            run.options.tag);
    if (!r.ok()) return r.status().with_context(context("to"));
    sends.push_back(std::move(r).value());
  }
  clear_dots(run);
  size_t lo = keep_lo;
  for (std::unique_ptr<Request>& r : recvs) {
    Status s = r->wait(run.options.deadline);
    if (!s.ok()) return s.with_context(context("from"));
    const size_t hi = std::min(lo + seg, keep_hi);
    const uint8_t* mine = run.at(run.out, lo);
    const uint8_t* theirs = run.at(run.other, lo);
    piece_dots(run, lower ? mine : theirs, lower ? theirs : mine, lo, hi);
    lo = hi;
  }
  Status s = detail::wait_all(sends, run.options.deadline);
  return s.ok() ? s : s.with_context(context("to"));
}

// out[lo, hi) = adasum of a and b per tensor, with the whole tensors' dot products in dots.
void piece_combine(const AdasumRun& run, const uint8_t* a, const uint8_t* b, size_t lo, size_t hi) {
  for (size_t t = 0; t < run.tensors(); ++t) {
    const size_t begin = std::max(lo, run.bounds[t]), end = std::min(hi, run.bounds[t + 1]);
    if (begin >= end) continue;
    kernels::AdasumDots d;
    d.ab = run.dots[3 * t];
    d.aa = run.dots[3 * t + 1];
    d.bb = run.dots[3 * t + 2];
    double ca = 1, cb = 1;
    kernels::adasum_coefficients(d, &ca, &cb);
    const size_t off = (begin - lo) * run.elem;
    kernels::adasum_combine(run.at(run.out, begin), a + off, b + off, end - begin, run.dtype, ca,
                            cb);
  }
}

// Sums dots over the 2 * level ids that share the bits above `level`: recursive doubling,
// the lower id's operand first, so every member gets the same bits.
Status group_sum(const AdasumRun& run, int id, int level, int (*rank_of)(int, int), int extra) {
  const size_t bytes = 3 * run.tensors() * sizeof(double);
  for (int d = 1; d <= level; d <<= 1) {
    const int peer_id = id ^ d;
    const int peer = rank_of(peer_id, extra);
    HORA_RETURN_IF_ERROR(detail::send_recv(run.comm, peer, run.dots, bytes, peer, run.peer_dots,
                                           bytes, run.options, kName, "dot-product sum", d));
    for (size_t i = 0; i < 3 * run.tensors(); ++i)
      run.dots[i] = id < peer_id ? run.dots[i] + run.peer_dots[i] : run.peer_dots[i] + run.dots[i];
  }
  return Status::OK();
}

int rank_of_id(int id, int extra) { return id < extra ? 2 * id + 1 : id + extra; }

// Step 1's pair (or any pair of whole buffers): out = adasum(a, b) per tensor.
void combine_whole(const AdasumRun& run, const uint8_t* a, const uint8_t* b) {
  clear_dots(run);
  piece_dots(run, a, b, 0, run.total());
  piece_combine(run, a, b, 0, run.total());
}

// Steps 2 and 3 for the rank of `id` among p.
Status halving_doubling(AdasumRun& run, int id, int p, int extra) {
  // Before each level: the range held, and whether this rank kept its lower half.
  std::vector<std::tuple<size_t, size_t, bool>> ranges;
  size_t lo = 0, hi = run.total();
  for (int level = 1; level < p; level <<= 1) {
    const int peer = rank_of_id(id ^ level, extra);
    const size_t mid = lo + (hi - lo) / 2;
    const bool lower = (id & level) == 0;
    ranges.emplace_back(lo, hi, lower);
    const size_t keep_lo = lower ? lo : mid, keep_hi = lower ? mid : hi;
    const size_t send_lo = lower ? mid : lo, send_hi = lower ? hi : mid;
    HORA_RETURN_IF_ERROR(
        exchange_with_dots(run, peer, send_lo, send_hi, keep_lo, keep_hi, lower, level));
    const uint8_t* mine = run.at(run.out, keep_lo);
    const uint8_t* theirs = run.at(run.other, keep_lo);
    const uint8_t* a = lower ? mine : theirs;
    const uint8_t* b = lower ? theirs : mine;
    HORA_RETURN_IF_ERROR(group_sum(run, id, level, rank_of_id, extra));
    piece_combine(run, a, b, keep_lo, keep_hi);
    lo = keep_lo;
    hi = keep_hi;
  }
  for (int level = p / 2; level >= 1; level >>= 1) {
    const auto [range_lo, range_hi, lower] = ranges.back();
    ranges.pop_back();
    const int peer = rank_of_id(id ^ level, extra);
    const size_t peer_lo = lower ? hi : range_lo;
    const size_t peer_hi = lower ? range_hi : lo;
    HORA_RETURN_IF_ERROR(detail::send_recv(
        run.comm, peer, run.at(run.out, lo), (hi - lo) * run.elem, peer, run.at(run.out, peer_lo),
        (peer_hi - peer_lo) * run.elem, run.options, kName, "doubling level", level));
    lo = range_lo;
    hi = range_hi;
  }
  return Status::OK();
}

Status adasum_schedule(AdasumRun& run) {
  Communicator& comm = run.comm;
  const int n = comm.size(), r = comm.rank();
  const size_t bytes = run.total() * run.elem;
  const Deadline deadline = run.options.deadline;
  int p = 1;
  while (p * 2 <= n) p *= 2;
  const int extra = n - p;
  const bool folded = r < 2 * extra;
  auto fold_error = [&](const Status& s, const char* phase, int peer) {
    return s.with_context(std::string(" [") + kName + " " + phase + ", peer rank " +
                          std::to_string(peer) + "]");
  };
  if (folded && r % 2 == 0) {
    Status s = comm.send(r + 1, run.out, bytes, run.options.tag, deadline);
    if (s.ok()) s = comm.recv(r + 1, run.out, bytes, run.options.tag, deadline);
    return s.ok() ? s : fold_error(s, "fold", r + 1);
  }
  if (folded) {
    Status s = comm.recv(r - 1, run.other, bytes, run.options.tag, deadline);
    if (!s.ok()) return fold_error(s, "fold-in", r - 1);
    combine_whole(run, run.other, run.out);  // the lower rank's vector is a
  }
  HORA_RETURN_IF_ERROR(halving_doubling(run, folded ? r / 2 : r - extra, p, extra));
  if (folded) {
    Status s = comm.send(r - 1, run.out, bytes, run.options.tag, deadline);
    if (!s.ok()) return fold_error(s, "fold-out", r - 1);
  }
  return Status::OK();
}

}  // namespace

Status adasum_allreduce(Communicator& comm, const void* in, void* out,
                        const std::vector<size_t>& counts, DataType dtype,
                        const AlgorithmOptions& options) {
  if (!is_reduce_op_defined(ReduceOp::kAdasum, dtype))
    return reduce_op_undefined(ReduceOp::kAdasum, dtype, kName);
  if (comm.buffer_ops() != nullptr)
    return Status::unimplemented(std::string(kName) + " on " + comm.backend_name() +
                                 ": device buffers reduce staged through host memory");
  AdasumRun run{comm,    options, dtype,  data_type_bytes(dtype), {0}, static_cast<uint8_t*>(out),
                nullptr, nullptr, nullptr};
  run.bounds.reserve(counts.size() + 1);
  for (size_t c : counts) run.bounds.push_back(run.bounds.back() + c);
  const size_t bytes = run.total() * run.elem;
  if (bytes == 0) return Status::OK();
  if (in != out) kernels::copy(out, in, bytes);
  if (comm.size() == 1) return Status::OK();
  ScratchPool local;
  ScratchPool& pool = detail::scratch_pool(options, local);
  run.other = pool.acquire(0, bytes);
  run.dots = reinterpret_cast<double*>(pool.acquire(1, 6 * run.tensors() * sizeof(double)));
  run.peer_dots = run.dots + 3 * run.tensors();
  return adasum_schedule(run);
}

Status adasum_allreduce(Communicator& comm, const void* in, void* out, size_t count, DataType dtype,
                        const AlgorithmOptions& options) {
  return adasum_allreduce(comm, in, out, std::vector<size_t>{count}, dtype, options);
}

}  // namespace collectives
}  // namespace hora
