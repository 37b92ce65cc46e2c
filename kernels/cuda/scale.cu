// scale_copy / scale and the batched scaled copy (packing and unpacking a fusion buffer).
//
// Batched schedule: one launch per group of up to kMaxBatchItems items, whose descriptors are
// the kernel's argument. Grid y is the item; grid x strides over the item's elements (sized
// for the group's largest item, capped at kMaxBlocks / 4 per item), so many small tensors
// fill the GPU together instead of one tiny launch each. A plain copy (factor 1) moves
// 16-byte words when the item's pointers and length allow, else 4-byte words, else bytes; a
// scaled one moves 16-byte vectors of elements when the item's pointers are 16-byte aligned
// (elementwise.cuh's for_each_element), the tail element by element.
#include <algorithm>

#include "kernels/cuda/elementwise.cuh"
#include "kernels/round_scaled.h"

namespace hora {
namespace kernels {
namespace cuda {
namespace detail {
namespace {

// kernels.h's scale rule for one element: floats in their own precision (float16/bfloat16 via
// float32); integers through float64, rounded half away from zero, wrapped to the width.
template <DataType kDt>
__device__ __forceinline__ typename Traits<kDt>::Elem scale_one(typename Traits<kDt>::Elem x,
                                                                double factor) {
  using T = Traits<kDt>;
  using C = typename T::Compute;
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<typename T::Elem>;
    const long long rounded = round_scaled(static_cast<double>(T::load(x)) * factor);
    return static_cast<typename T::Elem>(static_cast<U>(static_cast<unsigned long long>(rounded)));
  } else {
    return T::store(T::load(x) * static_cast<C>(factor));
  }
}

template <DataType kDt>
__device__ __forceinline__ void scale_range(typename Traits<kDt>::Elem* dst,
                                            const typename Traits<kDt>::Elem* src, size_t count,
                                            double factor) {
  using E = typename Traits<kDt>::Elem;
  for_each_element(dst, src, static_cast<const E*>(nullptr), count,
                   [factor](E x, E) { return scale_one<kDt>(x, factor); });
}

template <DataType kDt>
__global__ void scale_kernel(typename Traits<kDt>::Elem* dst, const typename Traits<kDt>::Elem* src,
                             size_t count, double factor) {
  scale_range<kDt>(dst, src, count, factor);
}

struct Batch {
  CopyItem items[kMaxBatchItems];
};

template <DataType kDt>
__global__ void batched_scale_kernel(Batch batch, double factor) {
  using E = typename Traits<kDt>::Elem;
  const CopyItem item = batch.items[blockIdx.y];
  scale_range<kDt>(static_cast<E*>(item.dst), static_cast<const E*>(item.src), item.count, factor);
}

template <typename W>
__device__ __forceinline__ void copy_words(void* dst, const void* src, size_t bytes) {
  W* d = static_cast<W*>(dst);
  const W* s = static_cast<const W*>(src);
  const size_t words = bytes / sizeof(W);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words;
       i += stride) {
    d[i] = s[i];
  }
}

__global__ void batched_copy_kernel(Batch batch, size_t elem_bytes) {
  const CopyItem item = batch.items[blockIdx.y];
  const size_t bytes = item.count * elem_bytes;
  const uintptr_t all = reinterpret_cast<uintptr_t>(item.dst) |
                        reinterpret_cast<uintptr_t>(item.src) | static_cast<uintptr_t>(bytes);
  if (all % 16 == 0) {
    copy_words<uint4>(item.dst, item.src, bytes);
  } else if (all % 4 == 0) {
    copy_words<uint32_t>(item.dst, item.src, bytes);
  } else {
    copy_words<uint8_t>(item.dst, item.src, bytes);
  }
}

}  // namespace
}  // namespace detail

Status scale_copy(void* dst, const void* src, size_t count, DataType dtype, double factor,
                  Stream stream) {
  if (!is_scale_defined(dtype, factor))
    return Status::invalid_argument("cuda scale: scaling " + std::string(data_type_name(dtype)) +
                                    " by " + std::to_string(factor) + " is not defined");
  if (count == 0) return Status::OK();
  if (factor == 1.0) {
    if (dst == src) return Status::OK();
    return cuda_status(
        cudaMemcpyAsync(dst, src, count * data_type_bytes(dtype), cudaMemcpyDeviceToDevice, stream),
        "cuda scale_copy (cudaMemcpyAsync)");
  }
  HORA_RETURN_IF_ERROR(detail::check_aligned("cuda scale", dtype, dst, src));
  return detail::for_dtype(dtype, [&](auto tag) -> Status {
    constexpr DataType kDt = decltype(tag)::value;
    using E = typename detail::Traits<kDt>::Elem;
    detail::scale_kernel<kDt>
        <<<detail::blocks_for(detail::vector_units(count, sizeof(E))), detail::kThreads, 0,
           stream>>>(static_cast<E*>(dst), static_cast<const E*>(src), count, factor);
    return detail::launch_status("cuda scale");
  });
}

Status scale(void* buf, size_t count, DataType dtype, double factor, Stream stream) {
  return scale_copy(buf, buf, count, dtype, factor, stream);
}

Status batched_scale_copy(const CopyItem* items, size_t num_items, DataType dtype, double factor,
                          Stream stream) {
  if (!is_scale_defined(dtype, factor))
    return Status::invalid_argument("cuda batched copy: scaling " +
                                    std::string(data_type_name(dtype)) + " by " +
                                    std::to_string(factor) + " is not defined");
  for (size_t first = 0; first < num_items; first += kMaxBatchItems) {
    const size_t n = std::min(kMaxBatchItems, num_items - first);
    detail::Batch batch{};
    size_t largest = 0;
    for (size_t k = 0; k < n; ++k) {
      batch.items[k] = items[first + k];
      if (factor != 1.0)
        HORA_RETURN_IF_ERROR(detail::check_aligned("cuda batched copy", dtype, items[first + k].dst,
                                                   items[first + k].src));
      largest = std::max(largest, items[first + k].count);
    }
    if (largest == 0) continue;
    // Threads per item cover its 16-byte words (a plain copy) or vectors of elements.
    const size_t units = factor == 1.0 ? (largest * data_type_bytes(dtype) + 15) / 16
                                       : detail::vector_units(largest, data_type_bytes(dtype));
    const dim3 grid(std::min(detail::blocks_for(units), detail::kMaxBlocks / 4),
                    static_cast<unsigned>(n));
    if (factor == 1.0) {
      detail::batched_copy_kernel<<<grid, detail::kThreads, 0, stream>>>(batch,
                                                                         data_type_bytes(dtype));
      HORA_RETURN_IF_ERROR(detail::launch_status("cuda batched copy"));
      continue;
    }
    HORA_RETURN_IF_ERROR(detail::for_dtype(dtype, [&](auto tag) -> Status {
      constexpr DataType kDt = decltype(tag)::value;
      detail::batched_scale_kernel<kDt><<<grid, detail::kThreads, 0, stream>>>(batch, factor);
      return detail::launch_status("cuda batched scaled copy");
    }));
  }
  return Status::OK();
}

}  // namespace cuda
}  // namespace kernels
}  // namespace hora
