#include "core/engine/compressed_copy.h"

#include <algorithm>
#include <cstdint>

#include "hora/logging.h"
#include "kernels/kernels.h"

namespace hora {
namespace engine {
namespace {

// 16 KiB of float32 on the stack: the scaled chunk stays in L1 until the cast reads it.
constexpr size_t kChunk = 4096;

void cast_to_half(void* dst, const float* src, size_t count, Compression compression) {
  uint16_t* out = static_cast<uint16_t*>(dst);
  if (compression == Compression::kFloat16) {
    kernels::cast_f32_to_f16(out, src, count);
  } else {
    kernels::cast_f32_to_bf16(out, src, count);
  }
}

void cast_from_half(float* dst, const void* src, size_t count, Compression compression) {
  const uint16_t* in = static_cast<const uint16_t*>(src);
  if (compression == Compression::kFloat16) {
    kernels::cast_f16_to_f32(dst, in, count);
  } else {
    kernels::cast_bf16_to_f32(dst, in, count);
  }
}

}  // namespace

void pack_compressed(void* dst, const float* src, size_t count, Compression compression,
                     double prescale) {
  HORA_CHECK(compression != Compression::kNone) << "pack_compressed without compression";
  if (prescale == 1.0) {
    cast_to_half(dst, src, count, compression);
    return;
  }
  float scaled[kChunk];
  uint16_t* out = static_cast<uint16_t*>(dst);
  for (size_t i = 0; i < count; i += kChunk) {
    const size_t n = std::min(kChunk, count - i);
    kernels::scale_copy(scaled, src + i, n, DataType::kFloat32, prescale);
    cast_to_half(out + i, scaled, n, compression);
  }
}

void unpack_compressed(float* dst, const void* src, size_t count, Compression compression,
                       double postscale) {
  HORA_CHECK(compression != Compression::kNone) << "unpack_compressed without compression";
  if (postscale == 1.0) {
    cast_from_half(dst, src, count, compression);
    return;
  }
  const uint16_t* in = static_cast<const uint16_t*>(src);
  for (size_t i = 0; i < count; i += kChunk) {
    const size_t n = std::min(kChunk, count - i);
    cast_from_half(dst + i, in + i, n, compression);
    kernels::scale(dst + i, n, DataType::kFloat32, postscale);
  }
}

}  // namespace engine
}  // namespace hora
