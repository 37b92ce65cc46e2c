// Compressed copies: how the executor packs a float32 tensor into a float16/bfloat16 fusion
// buffer (Compression, hora/compression.h) and unpacks the reduced result, with the
// request's prescale or postscale applied in float32 on the way.
//
// The scale is applied before the cast when packing and after it when unpacking, so each
// value is rounded to the half type once (as a fused scaled cast would). Both walk the tensor
// in chunks of a few KiB, so the second pass over each chunk hits the cache.
// Pure functions of their arguments; thread-safe.
#pragma once

#include <cstddef>

#include "hora/compression.h"

namespace hora {
namespace engine {

// dst[i] = half(src[i] * prescale), dst of wire_data_type(kFloat32, compression).
// REQUIRES: compression != kNone; dst and src do not overlap.
void pack_compressed(void* dst, const float* src, size_t count, Compression compression,
                     double prescale);
// dst[i] = float(src[i]) * postscale, src of wire_data_type(kFloat32, compression).
// REQUIRES: compression != kNone; dst and src do not overlap.
void unpack_compressed(float* dst, const void* src, size_t count, Compression compression,
                       double postscale);

}  // namespace engine
}  // namespace hora
