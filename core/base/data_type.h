// DataType: the element types hora moves and reduces, with their sizes and names.
// Plain values; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/base/status.h"

namespace hora {

enum class DataType : uint8_t {
  kUint8 = 0,
  kInt8,
  kInt32,
  kInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
};

inline constexpr int kNumDataTypes = 8;

// Bytes per element.
size_t data_type_bytes(DataType dtype);
// "float32", "bfloat16", ...
const char* data_type_name(DataType dtype);
// Parses a name ("float32", also "f32", "fp16", "bf16", "int32", ...). Fails with a message
// naming the value and the accepted names.
StatusOr<DataType> parse_data_type(const std::string& name);
// True for float16, bfloat16, float32, float64.
bool is_floating(DataType dtype);
// Validates a raw integer received from a peer or a binding.
StatusOr<DataType> data_type_from_int(int value);

}  // namespace hora
