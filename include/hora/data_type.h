// DataType: the element types hora moves and reduces, with their sizes and names.
// Plain values; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "hora/status.h"

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
  // Appended after the first eight so their wire values (the engine's messages) keep their
  // meaning.
  kInt16,
  kUint16,
  // One byte per element: 0 is false, any other byte is true. Reductions are defined only as
  // min (logical and), max (logical or) and product (logical and), see check_reduce_op in
  // reduce_op.h; every element they combine comes out 0 or 1 (on one rank nothing is combined
  // and the bytes are copied as they are).
  kBool,
};

inline constexpr int kNumDataTypes = 11;

// Bytes per element.
size_t data_type_bytes(DataType dtype);
// "float32", "bfloat16", ...
const char* data_type_name(DataType dtype);
// Parses a name ("float32", also "f32", "fp16", "bf16", "int32", "i16", "u16", "bool", ...).
// Fails with a message naming the value and the accepted names.
StatusOr<DataType> parse_data_type(const std::string& name);
// True for float16, bfloat16, float32, float64 (not for the integers or bool).
bool is_floating(DataType dtype);
// Validates a raw integer received from a peer or a binding: 0..kNumDataTypes-1.
StatusOr<DataType> data_type_from_int(int value);

}  // namespace hora
