#include "hora/data_type.h"

#include "core/base/name_table.h"

namespace hora {
namespace {

struct TypeInfo {
  DataType dtype;
  size_t bytes;
  const char* name;
  const char* alias1;
  const char* alias2;
};

// Indexed by the enum's value.
constexpr TypeInfo kTypes[kNumDataTypes] = {
    {DataType::kUint8, 1, "uint8", "u8", "byte"},
    {DataType::kInt8, 1, "int8", "i8", "char"},
    {DataType::kInt32, 4, "int32", "i32", "int"},
    {DataType::kInt64, 8, "int64", "i64", "long"},
    {DataType::kFloat16, 2, "float16", "f16", "half"},
    {DataType::kBFloat16, 2, "bfloat16", "bf16", "bfloat"},
    {DataType::kFloat32, 4, "float32", "f32", "float"},
    {DataType::kFloat64, 8, "float64", "f64", "double"},
    {DataType::kInt16, 2, "int16", "i16", "short"},
    {DataType::kUint16, 2, "uint16", "u16", "ushort"},
    {DataType::kBool, 1, "bool", "boolean", "bool_"},
};

constexpr bool table_matches_enum() {
  for (int i = 0; i < kNumDataTypes; ++i)
    if (static_cast<int>(kTypes[i].dtype) != i) return false;
  return true;
}
static_assert(table_matches_enum(), "kTypes must be indexed by the DataType value");

// Names beyond kTypes' three per type.
constexpr NameAlias<DataType> kExtraAliases[] = {
    {"fp16", DataType::kFloat16}, {"fp32", DataType::kFloat32}, {"fp64", DataType::kFloat64}};

}  // namespace

size_t data_type_bytes(DataType dtype) { return kTypes[static_cast<int>(dtype)].bytes; }
const char* data_type_name(DataType dtype) { return kTypes[static_cast<int>(dtype)].name; }

StatusOr<DataType> parse_data_type(const std::string& name) {
  for (const TypeInfo& t : kTypes) {
    if (name == t.name || name == t.alias1 || name == t.alias2) return t.dtype;
  }
  if (auto dtype = find_alias(kExtraAliases, name)) return *dtype;
  return Status::invalid_argument("unknown data type '" + name +
                                  "': expected one of uint8, int8, int16, uint16, int32, "
                                  "int64, float16, bfloat16, float32, float64, bool");
}

bool is_floating(DataType dtype) {
  return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16 ||
         dtype == DataType::kFloat32 || dtype == DataType::kFloat64;
}

StatusOr<DataType> data_type_from_int(int value) {
  if (value < 0 || value >= kNumDataTypes)
    return Status::invalid_argument("data type code " + std::to_string(value) +
                                    " is out of range: expected 0.." +
                                    std::to_string(kNumDataTypes - 1));
  return static_cast<DataType>(value);
}

}  // namespace hora
