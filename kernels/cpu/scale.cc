// scale / scale_copy: the entry points, forwarding to the active ISA's table. factor == 1.0
// is a no-op / plain copy (bit-exact, NaN payloads included).
#include "hora/logging.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/kernels.h"

namespace hora {
namespace kernels {

void scale_copy(void* dst, const void* src, size_t count, DataType dtype, double factor) {
  const int dt = static_cast<int>(dtype);
  HORA_CHECK(dt >= 0 && dt < kNumDataTypes) << "dtype " << dt;
  if (count == 0) return;
  if (factor == 1.0) {
    copy(dst, src, count * data_type_bytes(dtype));
    return;
  }
  const detail::ScaleFn fn = detail::active_table().scale_copy[dt];
  HORA_CHECK(fn != nullptr) << "scale by " << factor << " is not defined for "
                            << data_type_name(dtype)
                            << "; the caller must refuse it (is_scale_defined)";
  fn(dst, src, count, factor);
}

void scale(void* buf, size_t count, DataType dtype, double factor) {
  scale_copy(buf, buf, count, dtype, factor);
}

}  // namespace kernels
}  // namespace hora
