// Schedule of shm_allreduce over N ranks (rank r), every rank's exchange memory mapped by all:
//
// Short path (bytes <= small_bytes): one step, one sync point.
//   1. copy `in` into slot(r, step);
//   2. sync;
//   3. out = slot(0) op slot(1) op ... op slot(N-1), reading every peer's slot directly, in
//      that fixed order on every rank (so every rank computes the same bits); scale for
//      kAverage.
//
// Large path: the message is cut into chunks of chunk_count = slot_bytes / element bytes;
// each chunk is one step with two sync points, and each chunk is cut into N slices
// (slice_count elements, rounded up to a 64-byte multiple; the last slices may be short or
// empty). For chunk k:
//   1. copy-in: copy the chunk of `in` into slot(r, step), all but slice r, which only rank
//      r reads (from `in`); or nothing when `in` lies in this rank's shared region (its source
//      offset, published for the call, tells peers where);
//   2. sync A;
//   3. reduce: rank r reduces slice r of the chunk from every rank's source (slot, shared
//      region, or its own `in`), in rank order 0..N-1, scales it for kAverage, and writes it
//      to its `out` and into slice r of slot(r, step) (nobody else reads that slice of its
//      slot), in one pass at two ranks, through an L1-sized block beyond (reduce_sources: no
//      source is overwritten before it is read);
//   4. sync B;
//   5. copy-out: rank r copies slice q of slot(q, step) into `out`, for every q != r.
// The two slots alternate by step, so chunk k + 1 fills the other slot while slow peers may
// still copy chunk k out, and no third sync point is needed (shm_exchange.h). Per chunk a rank
// moves: (N-1) slices (copy-in), chunk in + 2 slices out (reduce), (N-1) slices (copy-out).
//
// Single copy in place (in == out inside the shared region, the engine's fusion buffer): the
// reduced slice is written only into `out`, which peers can read, so they copy slice r out of
// rank r's shared region instead of its slot; and since they may still be reading it when rank
// r would return, the call ends with one more sync point (taken by every rank when any rank
// works this way; all know it from the published sources). A rank then moves only the chunk
// in and (N-1)/N of it out per chunk: the least memory traffic an allreduce can have.
#include "collectives/backends/builtin/shm_allreduce.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "collectives/backends/builtin/shm_reduce.h"
#include "collectives/backends/builtin/shm_slices.h"
#include "kernels/kernels.h"

namespace hora {
namespace collectives {
namespace builtin {
namespace {

Status small_allreduce(ShmExchange& x, const void* in, void* out, size_t count, DataType dtype,
                       ReduceOp op, double factor, Deadline deadline) {
  const int n = x.size();
  const size_t bytes = count * data_type_bytes(dtype);
  const uint64_t step = x.next_step();
  kernels::copy(x.slot(x.rank(), step, bytes), in, bytes);
  HORA_RETURN_IF_ERROR(x.arrive_and_wait(deadline, "allreduce"));
  auto* dst = static_cast<uint8_t*>(out);
  if (n == 2) {  // the common case, without the sources' vector
    kernels::reduce3_scaled(dst, nullptr, x.slot(0, step, bytes), x.slot(1, step, bytes), count,
                            dtype, op, factor);
    return Status::OK();
  }
  std::vector<const uint8_t*> srcs(n);
  for (int p = 0; p < n; ++p) srcs[p] = x.slot(p, step, bytes);
  reduce_sources(srcs, count, dtype, op, factor, dst, nullptr);
  return Status::OK();
}

// What every rank published for the call (ShmExchange::publish_source), decoded: offset[p]
// of rank p's source in its shared region (-1: in the slots) and whether it works in place.
struct PublishedSources {
  std::vector<int64_t> offset;
  std::vector<bool> in_place;
  bool any_in_place = false;

  bool read() const { return !offset.empty(); }
  void decode(const ShmExchange& x) {
    const int n = x.size();
    offset.resize(n);
    in_place.resize(n);
    for (int p = 0; p < n; ++p) {
      const int64_t v = x.source_of(p);
      offset[p] = v < 0 ? -1 : v / 2;
      in_place[p] = v >= 0 && (v & 1) != 0;
      any_in_place = any_in_place || in_place[p];
    }
  }
};

// The large path of the schedule above, chunk after chunk: steps 1-5 each, and the final sync
// point when any rank works in place.
Status large_allreduce(ShmExchange& x, const void* in, void* out, size_t count, DataType dtype,
                       ReduceOp kernel_op, double factor, Deadline deadline) {
  const int n = x.size();
  const int r = x.rank();
  const size_t esize = data_type_bytes(dtype);
  const auto* src = static_cast<const uint8_t*>(in);
  auto* dst = static_cast<uint8_t*>(out);
  // Published source: -1 (in the slots) or offset * 2 + (in place in the shared region).
  const int64_t my_offset = x.shared_offset_of(in, count * esize);
  const bool my_in_place = my_offset >= 0 && in == out;
  x.publish_source(my_offset < 0 ? -1 : my_offset * 2 + (my_in_place ? 1 : 0));
  PublishedSources sources;
  std::vector<const uint8_t*> srcs(n);
  const size_t chunk_count = x.slot_bytes() / esize;
  for (size_t first = 0; first < count; first += chunk_count) {
    const size_t m = std::min(chunk_count, count - first);
    const uint64_t step = x.next_step();
    const size_t used = m * esize;  // of each slot, this step (ShmExchange::slot)
    const ChunkSlices slices(m, n, esize);
    const size_t lo = slices.lo(r), hi = slices.hi(r);
    // 1. copy-in, all but slice r (only this rank reads that, and from `in` directly)
    if (my_offset < 0) {
      const uint8_t* from = src + first * esize;
      uint8_t* to = x.slot(r, step, used);
      kernels::copy(to, from, lo * esize);
      kernels::copy(to + hi * esize, from + hi * esize, (m - hi) * esize);
    }
    // 2. sync A
    HORA_RETURN_IF_ERROR(x.arrive_and_wait(deadline, "allreduce"));
    if (!sources.read()) sources.decode(x);
    // 3. reduce slice r
    if (hi > lo) {
      for (int p = 0; p < n; ++p) {
        const uint8_t* base = sources.offset[p] >= 0
                                  ? x.shared(p) + sources.offset[p] + first * esize
                                  : x.slot(p, step, used);
        srcs[p] = base + lo * esize;
      }
      if (my_offset < 0) srcs[r] = src + (first + lo) * esize;
      reduce_sources(srcs, hi - lo, dtype, kernel_op, factor, dst + (first + lo) * esize,
                     my_in_place ? nullptr : x.slot(r, step, used) + lo * esize);
    }
    // 4. sync B
    HORA_RETURN_IF_ERROR(x.arrive_and_wait(deadline, "allreduce"));
    // 5. copy-out
    for (int q = 0; q < n; ++q) {
      if (q == r) continue;
      const size_t qlo = slices.lo(q), qhi = slices.hi(q);
      const uint8_t* result = sources.in_place[q] ? x.shared(q) + sources.offset[q] + first * esize
                                                  : x.slot(q, step, used);
      if (qhi > qlo)
        kernels::copy(dst + (first + qlo) * esize, result + qlo * esize, (qhi - qlo) * esize);
    }
  }
  // Peers copy results out of in-place shared regions: keep them until every peer is done.
  if (sources.any_in_place) HORA_RETURN_IF_ERROR(x.arrive_and_wait(deadline, "allreduce"));
  return Status::OK();
}

// OK when there is one count per rank; otherwise kInvalidArgument "<collective>: k counts for n
// ranks".
Status check_counts(const char* collective, size_t counts, int n) {
  if (counts == static_cast<size_t>(n)) return Status::OK();
  return Status::invalid_argument(std::string(collective) + ": " + std::to_string(counts) +
                                  " counts for " + std::to_string(n) + " ranks");
}

}  // namespace

Status shm_allreduce(ShmExchange& x, const void* in, void* out, size_t count, DataType dtype,
                     ReduceOp op, Deadline deadline, const ShmCollectiveOptions& options) {
  HORA_RETURN_IF_ERROR(check_reduce_op(op, dtype, "builtin shm allreduce"));
  if (!x.failure().ok()) return x.failure();
  if (count == 0) return Status::OK();
  const int n = x.size();
  const size_t bytes = count * data_type_bytes(dtype);
  const ReduceOp kernel_op = op == ReduceOp::kAverage ? ReduceOp::kSum : op;
  const double factor = op == ReduceOp::kAverage ? 1.0 / n : 1.0;
  if (n == 1) {
    if (in != out) std::memmove(out, in, bytes);
    return Status::OK();
  }
  if (bytes <= options.small_bytes && bytes <= x.slot_bytes())
    return small_allreduce(x, in, out, count, dtype, kernel_op, factor, deadline);
  return large_allreduce(x, in, out, count, dtype, kernel_op, factor, deadline);
}

Status shm_broadcast(ShmExchange& x, void* buf, size_t count, DataType dtype, int root,
                     Deadline deadline) {
  if (!x.failure().ok()) return x.failure();
  if (root < 0 || root >= x.size())
    return Status::invalid_argument("broadcast root " + std::to_string(root) +
                                    " is out of range [0, " + std::to_string(x.size()) + ")");
  if (count == 0 || x.size() == 1) return Status::OK();
  auto* data = static_cast<uint8_t*>(buf);
  const size_t bytes = count * data_type_bytes(dtype);
  for (size_t first = 0; first < bytes; first += x.slot_bytes()) {
    const size_t m = std::min(x.slot_bytes(), bytes - first);
    const uint64_t step = x.next_step();
    if (x.rank() == root) kernels::copy(x.slot(root, step, m), data + first, m);
    HORA_RETURN_IF_ERROR(x.arrive_and_wait(deadline, "broadcast"));
    if (x.rank() != root) kernels::copy(data + first, x.slot(root, step, m), m);
  }
  return Status::OK();
}

// Allgatherv: steps of one slot of every block at a time; in step k rank r copies bytes
// [k * slot, (k + 1) * slot) of its block into slot(r, step), syncs, then copies that part of
// every peer's block out of the peer's slot. Its own block goes in -> out directly. One sync
// point per step; steps = the largest block / slot, the same on every rank.
Status shm_allgatherv(ShmExchange& x, const void* in, void* out, const std::vector<size_t>& counts,
                      DataType dtype, Deadline deadline) {
  if (!x.failure().ok()) return x.failure();
  const int n = x.size();
  const int r = x.rank();
  HORA_RETURN_IF_ERROR(check_counts("allgatherv", counts.size(), n));
  const size_t esize = data_type_bytes(dtype);
  std::vector<size_t> offset(n + 1, 0);  // bytes
  size_t largest = 0;
  for (int q = 0; q < n; ++q) {
    offset[q + 1] = offset[q] + counts[q] * esize;
    largest = std::max(largest, counts[q] * esize);
  }
  const auto* src = static_cast<const uint8_t*>(in);
  auto* dst = static_cast<uint8_t*>(out);
  const size_t mine = counts[r] * esize;
  if (mine > 0 && src != dst + offset[r]) std::memmove(dst + offset[r], src, mine);
  if (n == 1) return Status::OK();
  for (size_t at = 0; at < largest; at += x.slot_bytes()) {
    const uint64_t step = x.next_step();
    const size_t used = std::min(x.slot_bytes(), largest - at);  // the same on every rank
    if (at < mine)
      kernels::copy(x.slot(r, step, used), src + at, std::min(x.slot_bytes(), mine - at));
    HORA_RETURN_IF_ERROR(x.arrive_and_wait(deadline, "allgatherv"));
    for (int q = 0; q < n; ++q) {
      const size_t theirs = offset[q + 1] - offset[q];
      if (q == r || at >= theirs) continue;
      kernels::copy(dst + offset[q] + at, x.slot(q, step, used),
                    std::min(x.slot_bytes(), theirs - at));
    }
  }
  return Status::OK();
}

// Reducescatter: steps over windows of one slot of the whole input; in each step every rank
// copies its window into its slot (all but the part inside its own block, which only it reads,
// from `in`), syncs, and reduces the part of its own block inside the window from every rank,
// in rank order 0..N-1, straight into `out`. One sync point per step.
Status shm_reducescatter(ShmExchange& x, const void* in, void* out,
                         const std::vector<size_t>& recv_counts, DataType dtype, ReduceOp op,
                         Deadline deadline) {
  HORA_RETURN_IF_ERROR(check_reduce_op(op, dtype, "builtin shm reducescatter"));
  if (!x.failure().ok()) return x.failure();
  const int n = x.size();
  const int r = x.rank();
  HORA_RETURN_IF_ERROR(check_counts("reducescatter", recv_counts.size(), n));
  const size_t esize = data_type_bytes(dtype);
  size_t lo = 0, total = 0;  // elements
  for (int q = 0; q < n; ++q) {
    if (q == r) lo = total;
    total += recv_counts[q];
  }
  const size_t hi = lo + recv_counts[r];
  const auto* src = static_cast<const uint8_t*>(in);
  auto* dst = static_cast<uint8_t*>(out);
  if (n == 1) {
    if (hi > lo && src != dst) std::memmove(dst, src, (hi - lo) * esize);
    return Status::OK();
  }
  const ReduceOp kernel_op = op == ReduceOp::kAverage ? ReduceOp::kSum : op;
  const double factor = op == ReduceOp::kAverage ? 1.0 / n : 1.0;
  const size_t window = x.slot_bytes() / esize;
  std::vector<const uint8_t*> srcs(n);
  for (size_t first = 0; first < total; first += window) {
    const size_t end = std::min(total, first + window);
    const uint64_t step = x.next_step();
    // This rank's block inside the window: [a, b), possibly empty.
    const size_t a = std::min(std::max(lo, first), end), b = std::max(a, std::min(hi, end));
    const size_t used = (end - first) * esize;
    uint8_t* slot = x.slot(r, step, used);
    kernels::copy(slot, src + first * esize, (a - first) * esize);
    kernels::copy(slot + (b - first) * esize, src + b * esize, (end - b) * esize);
    HORA_RETURN_IF_ERROR(x.arrive_and_wait(deadline, "reducescatter"));
    if (b > a) {
      for (int p = 0; p < n; ++p) srcs[p] = x.slot(p, step, used) + (a - first) * esize;
      srcs[r] = src + a * esize;
      reduce_sources(srcs, b - a, dtype, kernel_op, factor, dst + (a - lo) * esize, nullptr);
    }
  }
  return Status::OK();
}

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
