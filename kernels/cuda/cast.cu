// float32 <-> float16 / bfloat16 casts on the device (half_bits.cuh's conversions).
#include "kernels/cuda/elementwise.cuh"

namespace hora {
namespace kernels {
namespace cuda {
namespace detail {
namespace {

// dst[i] = Dst::store(Src::load(src[i])): the two traits meet in float32.
template <DataType kSrc, DataType kDst>
__global__ void convert_kernel(typename Traits<kDst>::Elem* dst,
                               const typename Traits<kSrc>::Elem* src, size_t count) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    dst[i] = Traits<kDst>::store(Traits<kSrc>::load(src[i]));
  }
}

template <DataType kSrc, DataType kDst>
Status launch_convert(void* dst, const void* src, size_t count, Stream stream, const char* what) {
  if (count == 0) return Status::OK();
  HORA_RETURN_IF_ERROR(
      check_aligned(what, DataType::kFloat32, kDst == DataType::kFloat32 ? dst : src));
  HORA_RETURN_IF_ERROR(
      check_aligned(what, DataType::kFloat16, kDst == DataType::kFloat32 ? src : dst));
  convert_kernel<kSrc, kDst><<<blocks_for(count), kThreads, 0, stream>>>(
      static_cast<typename Traits<kDst>::Elem*>(dst),
      static_cast<const typename Traits<kSrc>::Elem*>(src), count);
  return launch_status(what);
}

}  // namespace
}  // namespace detail

Status cast_f32_to_f16(uint16_t* dst, const float* src, size_t count, Stream stream) {
  return detail::launch_convert<DataType::kFloat32, DataType::kFloat16>(dst, src, count, stream,
                                                                        "cuda cast_f32_to_f16");
}
Status cast_f16_to_f32(float* dst, const uint16_t* src, size_t count, Stream stream) {
  return detail::launch_convert<DataType::kFloat16, DataType::kFloat32>(dst, src, count, stream,
                                                                        "cuda cast_f16_to_f32");
}
Status cast_f32_to_bf16(uint16_t* dst, const float* src, size_t count, Stream stream) {
  return detail::launch_convert<DataType::kFloat32, DataType::kBFloat16>(dst, src, count, stream,
                                                                         "cuda cast_f32_to_bf16");
}
Status cast_bf16_to_f32(float* dst, const uint16_t* src, size_t count, Stream stream) {
  return detail::launch_convert<DataType::kBFloat16, DataType::kFloat32>(dst, src, count, stream,
                                                                         "cuda cast_bf16_to_f32");
}

}  // namespace cuda
}  // namespace kernels
}  // namespace hora
