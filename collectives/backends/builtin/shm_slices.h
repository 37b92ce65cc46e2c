// ChunkSlices: how the shared-memory allreduces (shm_allreduce.cc, shm_span_allreduce.cc) cut
// one chunk of m elements into n slices, slice q reduced by local rank q: slice_count elements
// each, rounded up to a 64-byte multiple so no two ranks write one cache line; the last slices
// may be short or empty. Plain value; thread-safe.
#pragma once

#include <algorithm>
#include <cstddef>

namespace hora {
namespace collectives {
namespace builtin {

struct ChunkSlices {
  // m: the chunk's elements; n: the local ranks (>= 1); esize: bytes per element (>= 1).
  ChunkSlices(size_t m, int n, size_t esize) : m(m) {
    const size_t align = std::max<size_t>(1, 64 / esize);
    const size_t slice = (m + static_cast<size_t>(n) - 1) / static_cast<size_t>(n);
    slice_count = (slice + align - 1) / align * align;
  }
  // Slice q is elements [lo(q), hi(q)) of the chunk.
  size_t lo(int q) const { return std::min(m, static_cast<size_t>(q) * slice_count); }
  size_t hi(int q) const { return std::min(m, lo(q) + slice_count); }

  size_t m;
  size_t slice_count;
};

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
