// reduce / reduce3 on the device: one grid-stride kernel per (dtype, op), moving 16-byte
// vectors when the buffers are 16-byte aligned (elementwise.cuh's for_each_element).
#include "kernels/cuda/elementwise.cuh"

namespace hora {
namespace kernels {
namespace cuda {
namespace detail {
namespace {

template <DataType kDt, Op kOp>
__global__ void binary_kernel(typename Traits<kDt>::Elem* dst, const typename Traits<kDt>::Elem* a,
                              const typename Traits<kDt>::Elem* b, size_t count) {
  using T = Traits<kDt>;
  using E = typename T::Elem;
  for_each_element(dst, a, b, count,
                   [](E x, E y) { return T::store(combine<kDt, kOp>(T::load(x), T::load(y))); });
}

template <DataType kDt, Op kOp>
void launch_binary(void* dst, const void* a, const void* b, size_t count, Stream stream) {
  using E = typename Traits<kDt>::Elem;
  binary_kernel<kDt, kOp><<<blocks_for(vector_units(count, sizeof(E))), kThreads, 0, stream>>>(
      static_cast<E*>(dst), static_cast<const E*>(a), static_cast<const E*>(b), count);
}

}  // namespace
}  // namespace detail

Status reduce3(void* dst, const void* a, const void* b, size_t count, DataType dtype, ReduceOp op,
               Stream stream) {
  using detail::Op;
  HORA_RETURN_IF_ERROR(check_reduce_op(op, dtype, "cuda reduce"));
  if (count == 0) return Status::OK();
  HORA_RETURN_IF_ERROR(detail::check_aligned("cuda reduce", dtype, dst, a, b));
  return detail::for_dtype(dtype, [&](auto tag) -> Status {
    constexpr DataType kDt = decltype(tag)::value;
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAverage:
        if constexpr (!detail::Traits<kDt>::kIsBool)
          detail::launch_binary<kDt, Op::kSum>(dst, a, b, count, stream);
        break;
      case ReduceOp::kMin: detail::launch_binary<kDt, Op::kMin>(dst, a, b, count, stream); break;
      case ReduceOp::kMax: detail::launch_binary<kDt, Op::kMax>(dst, a, b, count, stream); break;
      case ReduceOp::kProduct:
        detail::launch_binary<kDt, Op::kProduct>(dst, a, b, count, stream);
        break;
      default:
        return Status::invalid_argument(
            "cuda reduce: op value " + std::to_string(static_cast<int>(op)) + " is not a ReduceOp");
    }
    return detail::launch_status("cuda reduce");
  });
}

Status reduce(void* dst, const void* src, size_t count, DataType dtype, ReduceOp op,
              Stream stream) {
  return reduce3(dst, dst, src, count, dtype, op, stream);
}

}  // namespace cuda
}  // namespace kernels
}  // namespace hora
