// copy: the entry point, forwarding to the active ISA's table (loops.h: copy_kernel).
#include "kernels/cpu/kernel_table.h"
#include "kernels/kernels.h"

namespace hora {
namespace kernels {

void copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  detail::active_table().copy(dst, src, bytes);
}

}  // namespace kernels
}  // namespace hora
