#include "hora/compression.h"

namespace hora {

StatusOr<Compression> parse_compression(const std::string& text) {
  if (text == "none") return Compression::kNone;
  if (text == "fp16" || text == "float16") return Compression::kFloat16;
  if (text == "bf16" || text == "bfloat16") return Compression::kBFloat16;
  return Status::invalid_argument("compression '" + text +
                                  "': expected none, fp16 (float16) or bf16 (bfloat16)");
}

const char* compression_name(Compression compression) {
  switch (compression) {
    case Compression::kNone: return "none";
    case Compression::kFloat16: return "fp16";
    case Compression::kBFloat16: return "bf16";
  }
  return "unknown";
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
