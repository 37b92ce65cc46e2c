#include "collectives/backends/builtin/shm_reduce.h"

#include <algorithm>

#include "kernels/kernels.h"

namespace hora {
namespace collectives {
namespace builtin {
namespace {

// Reduce block size at 3 or more sources: two of these (the accumulator and one source's
// block) stay in L1.
constexpr size_t kBlockBytes = size_t{16} * 1024;

}  // namespace

void reduce_sources(const std::vector<const uint8_t*>& srcs, size_t count, DataType dtype,
                    ReduceOp op, double factor, uint8_t* dst, uint8_t* dst2) {
  const size_t esize = data_type_bytes(dtype);
  const int n = static_cast<int>(srcs.size());
  if (n == 1) {
    kernels::scale_copy(dst, srcs[0], count, dtype, factor);
    if (dst2 != nullptr) kernels::copy(dst2, dst, count * esize);
    return;
  }
  if (n == 2) {  // one pass: both sources in, the scaled result out to dst and dst2
    kernels::reduce3_scaled(dst, dst2, srcs[0], srcs[1], count, dtype, op, factor);
    return;
  }
  // srcs[0] op ... op srcs[n-2] into an L1 block, then that op srcs[n-1], scaled, straight out.
  alignas(64) uint8_t tmp[kBlockBytes];
  const size_t block = kBlockBytes / esize;
  for (size_t at = 0; at < count; at += block) {
    const size_t m = std::min(block, count - at);
    const size_t off = at * esize;
    kernels::reduce3(tmp, srcs[0] + off, srcs[1] + off, m, dtype, op);
    for (int p = 2; p < n - 1; ++p) kernels::reduce(tmp, srcs[p] + off, m, dtype, op);
    kernels::reduce3_scaled(dst + off, dst2 == nullptr ? nullptr : dst2 + off, tmp,
                            srcs[n - 1] + off, m, dtype, op, factor);
  }
}

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
