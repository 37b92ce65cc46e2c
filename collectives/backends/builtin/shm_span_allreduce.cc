#include "collectives/backends/builtin/shm_span_allreduce.h"

#include <algorithm>
#include <cstring>

#include "collectives/backends/builtin/shm_reduce.h"
#include "collectives/backends/builtin/shm_slices.h"
#include "kernels/kernels.h"

namespace hora {
namespace collectives {
namespace builtin {
namespace {

// The spans as one logical vector of elements.
class SpanVector {
 public:
  SpanVector(const std::vector<ReduceSpan>& spans, size_t esize) : spans_(spans), esize_(esize) {
    starts_.reserve(spans.size() + 1);
    size_t at = 0;
    for (const ReduceSpan& s : spans) {
      starts_.push_back(at);
      at += s.count;
    }
    starts_.push_back(at);
  }
  size_t total() const { return starts_.back(); }

  // Calls fn(span, first element within the span, its logical index, element count) for each
  // non-empty piece of the logical range [lo, hi), in order.
  template <typename Fn>
  void for_each(size_t lo, size_t hi, Fn fn) const {
    if (lo >= hi) return;
    size_t i = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), lo) -
                                   starts_.begin()) -
               1;
    for (; i < spans_.size() && starts_[i] < hi; ++i) {
      const size_t a = std::max(lo, starts_[i]), b = std::min(hi, starts_[i + 1]);
      if (b > a) fn(spans_[i], a - starts_[i], a, b - a);
    }
  }

  // Copies this rank's contribution to the logical range [lo, hi) to `to` (the range's first
  // element there): prescaled, zeros for a span without input. With `indirect_only`, only the
  // spans that the reduction cannot read in place (no input, or a prescale).
  void copy_in(size_t lo, size_t hi, uint8_t* to, DataType dtype, double prescale,
               bool indirect_only) const {
    for_each(lo, hi, [&](const ReduceSpan& s, size_t at, size_t logical, size_t k) {
      uint8_t* dst = to + (logical - lo) * esize_;
      if (s.in == nullptr) {
        std::memset(dst, 0, k * esize_);
      } else if (!indirect_only || prescale != 1.0) {
        kernels::scale_copy(dst, static_cast<const uint8_t*>(s.in) + at * esize_, k, dtype,
                            prescale);
      }
    });
  }

  // Copies the logical range [lo, hi) of a result (`from`: the range's first element) to the
  // spans' outputs.
  void copy_out(size_t lo, size_t hi, const uint8_t* from) const {
    for_each(lo, hi, [&](const ReduceSpan& s, size_t at, size_t logical, size_t k) {
      if (s.out != nullptr)
        kernels::copy(static_cast<uint8_t*>(s.out) + at * esize_, from + (logical - lo) * esize_,
                      k * esize_);
    });
  }

 private:
  const std::vector<ReduceSpan>& spans_;
  size_t esize_;
  std::vector<size_t> starts_;  // spans_.size() + 1 logical offsets
};

// The short path reduces its vector in pieces of this size through a buffer on the stack.
constexpr size_t kSmallResultBytes = size_t{16} << 10;

// One rank: each span's output is its input, prescaled and scaled (zeros without input).
void allreduce_spans_alone(const std::vector<ReduceSpan>& spans, DataType dtype, double prescale,
                           double factor) {
  const size_t esize = data_type_bytes(dtype);
  for (const ReduceSpan& s : spans) {
    if (s.out == nullptr || s.count == 0) continue;
    if (s.in == nullptr) {
      std::memset(s.out, 0, s.count * esize);
      continue;
    }
    kernels::scale_copy(s.out, s.in, s.count, dtype, prescale);
    kernels::scale(s.out, s.count, dtype, factor);
  }
}

// The short path: one step, one sync point, as shm_allreduce's.
Status small_allreduce_spans(ShmExchange& x, const SpanVector& v, DataType dtype,
                             ReduceOp kernel_op, double prescale, double factor,
                             Deadline deadline) {
  const int n = x.size();
  const size_t esize = data_type_bytes(dtype);
  const size_t count = v.total();
  std::vector<const uint8_t*> srcs(n);
  const uint64_t step = x.next_step();
  v.copy_in(0, count, x.slot(x.rank(), step, count * esize), dtype, prescale, false);
  HORA_RETURN_IF_ERROR(x.arrive_and_wait(deadline, "allreduce"));
  // The slots hold the whole vector contiguously: it is reduced in pieces of up to
  // kSmallResultBytes through a buffer on the stack (a few kernel calls a piece, not a few
  // per span), each piece then copied out to the spans it covers. Elementwise, so the bits
  // are a per-span reduction's. An engine step of 200 one-element spans at 2 ranks: 538 ->
  // 176 instructions a span in this function (callgrind).
  alignas(64) uint8_t result[kSmallResultBytes];
  const size_t piece = kSmallResultBytes / esize;
  for (size_t lo = 0; lo < count; lo += piece) {
    const size_t hi = std::min(count, lo + piece);
    for (int p = 0; p < n; ++p) srcs[p] = x.slot(p, step, count * esize) + lo * esize;
    reduce_sources(srcs, hi - lo, dtype, kernel_op, factor, result, nullptr);
    v.copy_out(lo, hi, result);
  }
  return Status::OK();
}

// The large path, chunk after chunk: shm_allreduce's steps 1-5 with every source in the slots.
Status large_allreduce_spans(ShmExchange& x, const SpanVector& v, DataType dtype,
                             ReduceOp kernel_op, double prescale, double factor,
                             Deadline deadline) {
  const int n = x.size();
  const int r = x.rank();
  const size_t esize = data_type_bytes(dtype);
  const size_t count = v.total();
  std::vector<const uint8_t*> srcs(n);
  // Every source of this call is in the slots (what shm_allreduce's peers would read).
  x.publish_source(-1);
  const size_t chunk_count = x.slot_bytes() / esize;
  for (size_t first = 0; first < count; first += chunk_count) {
    const size_t m = std::min(chunk_count, count - first);
    const uint64_t step = x.next_step();
    const size_t used = m * esize;  // of each slot, this step (ShmExchange::slot)
    const ChunkSlices slices(m, n, esize);
    const size_t lo = slices.lo(r), hi = slices.hi(r);
    uint8_t* mine = x.slot(r, step, used);
    // 1. copy-in: all but slice r, which the reduction reads in place where it can.
    v.copy_in(first, first + lo, mine, dtype, prescale, false);
    v.copy_in(first + hi, first + m, mine + hi * esize, dtype, prescale, false);
    v.copy_in(first + lo, first + hi, mine + lo * esize, dtype, prescale, true);
    // 2. sync A
    HORA_RETURN_IF_ERROR(x.arrive_and_wait(deadline, "allreduce"));
    // 3. reduce slice r into the outputs and into this rank's slot, for the peers.
    v.for_each(first + lo, first + hi,
               [&](const ReduceSpan& s, size_t at, size_t logical, size_t k) {
                 const size_t off = (logical - first) * esize;
                 for (int p = 0; p < n; ++p) srcs[p] = x.slot(p, step, used) + off;
                 if (s.in != nullptr && prescale == 1.0)
                   srcs[r] = static_cast<const uint8_t*>(s.in) + at * esize;
                 if (s.out != nullptr) {
                   reduce_sources(srcs, k, dtype, kernel_op, factor,
                                  static_cast<uint8_t*>(s.out) + at * esize, mine + off);
                 } else {
                   reduce_sources(srcs, k, dtype, kernel_op, factor, mine + off, nullptr);
                 }
               });
    // 4. sync B
    HORA_RETURN_IF_ERROR(x.arrive_and_wait(deadline, "allreduce"));
    // 5. copy-out: every other slice from its owner's slot.
    for (int q = 0; q < n; ++q) {
      if (q == r) continue;
      const size_t qlo = slices.lo(q), qhi = slices.hi(q);
      v.copy_out(first + qlo, first + qhi, x.slot(q, step, used) + qlo * esize);
    }
  }
  return Status::OK();
}

}  // namespace

Status shm_allreduce_spans(ShmExchange& x, const std::vector<ReduceSpan>& spans, DataType dtype,
                           ReduceOp op, double prescale, double postscale, Deadline deadline,
                           const ShmCollectiveOptions& options) {
  HORA_RETURN_IF_ERROR(check_reduce_op(op, dtype, "builtin shm allreduce"));
  if (!x.failure().ok()) return x.failure();
  const int n = x.size();
  const size_t esize = data_type_bytes(dtype);
  const SpanVector v(spans, esize);
  const size_t count = v.total();
  if (count == 0) return Status::OK();
  const ReduceOp kernel_op = op == ReduceOp::kAverage ? ReduceOp::kSum : op;
  const double factor = op == ReduceOp::kAverage ? postscale * (1.0 / n) : postscale;
  if (n == 1) {
    allreduce_spans_alone(spans, dtype, prescale, factor);
    return Status::OK();
  }
  if (count * esize <= options.small_bytes && count * esize <= x.slot_bytes())
    return small_allreduce_spans(x, v, dtype, kernel_op, prescale, factor, deadline);
  return large_allreduce_spans(x, v, dtype, kernel_op, prescale, factor, deadline);
}

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
