// copy: the entry point, forwarding to the active ISA's table (loops.h: copy_kernel) where
// memcpy would not do.
#include <cstdint>
#include <cstring>

#include "kernels/cpu/kernel_table.h"
#include "kernels/kernels.h"

namespace hora {
namespace kernels {

void copy(void* dst, const void* src, size_t bytes) {
  // memcpy's cases (loops.h, copy_kernel) decided here, before the table: the common one, a
  // small copy or one between buffers aligned alike, pays a compare rather than the dispatch.
  const uintptr_t apart = reinterpret_cast<uintptr_t>(dst) - reinterpret_cast<uintptr_t>(src);
  if (bytes == 0 || apart == 0) return;  // (memcpy's pointers must not be null, even for 0)
  if (bytes < detail::kCopyVectorFrom || apart % detail::kCopyAlignedAlike == 0) {
    std::memcpy(dst, src, bytes);
    return;
  }
  detail::active_table().copy(dst, src, bytes);
}

}  // namespace kernels
}  // namespace hora
