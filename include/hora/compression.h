// Compression: the wire format of a float32 allreduce (Horovod's Compression.fp16). The
// engine casts each tensor to float16 or bfloat16 while packing it into the fusion buffer,
// the algorithm moves and reduces the half type (the kernels accumulate each pairwise step in
// float32), and the engine casts back while unpacking. Plain values; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "hora/data_type.h"
#include "hora/status.h"

namespace hora {

enum class Compression : uint8_t { kNone = 0, kFloat16, kBFloat16 };

inline constexpr int kNumCompressions = 3;

// "none", "fp16" ("float16"), "bf16" ("bfloat16"); anything else is kInvalidArgument naming
// the value and the accepted names.
StatusOr<Compression> parse_compression(const std::string& text);
// "none", "fp16", "bf16".
const char* compression_name(Compression compression);
StatusOr<Compression> compression_from_int(int value);
// The dtype on the wire for a tensor of `dtype`: dtype itself for kNone.
DataType wire_data_type(DataType dtype, Compression compression);

}  // namespace hora
