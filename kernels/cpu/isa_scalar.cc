// The scalar kernel table: one element at a time.
//
// Built with -fno-tree-vectorize -fno-tree-slp-vectorize (kernels/cpu/CMakeLists.txt) so
// that this path is genuinely scalar: it is the fallback for CPUs without AVX2 and the
// baseline that kernels_bench compares the vector paths against, and an auto-vectorised
// "scalar" path would make that ratio meaningless.
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/loops.h"

namespace hora {
namespace kernels {
namespace detail {
namespace {

struct ScalarPolicy {
  template <int kDt>
  using Lanes = ScalarLanes<kDt>;
};

}  // namespace

const KernelTable& scalar_table() {
  static const KernelTable table = make_table<ScalarPolicy>();
  return table;
}

}  // namespace detail
}  // namespace kernels
}  // namespace hora
