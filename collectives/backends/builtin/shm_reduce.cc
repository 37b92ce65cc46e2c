#include "collectives/backends/builtin/shm_reduce.h"

#include <algorithm>

#include "kernels/kernels.h"

namespace hora {
namespace collectives {
namespace builtin {
namespace {

// Reduce block size: two of these (the accumulator and one source line) stay in L1.
constexpr size_t kBlockBytes = size_t{16} * 1024;

}  // namespace

void reduce_sources(const std::vector<const uint8_t*>& srcs, size_t count, DataType dtype,
                    ReduceOp op, double factor, uint8_t* dst, uint8_t* dst2) {
  alignas(64) uint8_t tmp[kBlockBytes];
  const size_t esize = data_type_bytes(dtype);
  const size_t block = kBlockBytes / esize;
  const int n = static_cast<int>(srcs.size());
  for (size_t at = 0; at < count; at += block) {
    const size_t m = std::min(block, count - at);
    const size_t off = at * esize;
    if (n == 1) {
      kernels::copy(tmp, srcs[0] + off, m * esize);
    } else {
      kernels::reduce3(tmp, srcs[0] + off, srcs[1] + off, m, dtype, op);
      for (int p = 2; p < n; ++p) kernels::reduce(tmp, srcs[p] + off, m, dtype, op);
    }
    if (factor != 1.0) kernels::scale(tmp, m, dtype, factor);
    kernels::copy(dst + off, tmp, m * esize);
    if (dst2 != nullptr) kernels::copy(dst2 + off, tmp, m * esize);
  }
}

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
