#include "hora/compression.h"

#include "core/base/name_table.h"

namespace hora {
namespace {

constexpr const char* kCompressionNames[] = {"none", "fp16", "bf16"};
static_assert(std::size(kCompressionNames) == kNumCompressions);
constexpr NameAlias<Compression> kCompressionAliases[] = {{"float16", Compression::kFloat16},
                                                          {"bfloat16", Compression::kBFloat16}};

}  // namespace

StatusOr<Compression> parse_compression(const std::string& text) {
  if (auto compression = find_name(kCompressionNames, kCompressionAliases, text))
    return *compression;
  return Status::invalid_argument("compression '" + text +
                                  "': expected none, fp16 (float16) or bf16 (bfloat16)");
}

const char* compression_name(Compression compression) {
  return name_of(kCompressionNames, compression);
}

StatusOr<Compression> compression_from_int(int value) {
  if (value < 0 || value >= kNumCompressions)
    return Status::invalid_argument("compression code " + std::to_string(value) +
                                    " is out of range: expected 0.." +
                                    std::to_string(kNumCompressions - 1));
  return static_cast<Compression>(value);
}

DataType wire_data_type(DataType dtype, Compression compression) {
  switch (compression) {
    case Compression::kNone: return dtype;
    case Compression::kFloat16: return DataType::kFloat16;
    case Compression::kBFloat16: return DataType::kBFloat16;
  }
  return dtype;
}

}  // namespace hora
