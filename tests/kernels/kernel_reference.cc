#include "tests/kernels/kernel_reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>

namespace hora {
namespace kernels_test {
namespace {

// Every non-negative finite value of a format, indexed by bit pattern (so sorted), plus the
// power of two above the largest finite value, where rounding overflows.
struct HalfTable {
  std::vector<double> values;
  double overflow_threshold = 0;  // The midpoint between the largest value and the next.
  uint16_t infinity_bits = 0;
};

HalfTable make_table(HalfFormat format) {
  HalfTable table;
  const int bias = (1 << (format.exponent_bits - 1)) - 1;
  const uint32_t max_exponent = (1u << format.exponent_bits) - 1;
  for (uint32_t bits = 0;; ++bits) {
    const uint32_t exponent = bits >> format.mantissa_bits;
    if (exponent == max_exponent) break;
    const uint32_t mantissa = bits & ((1u << format.mantissa_bits) - 1);
    const double value = exponent == 0
                             ? std::ldexp(double(mantissa), 1 - bias - format.mantissa_bits)
                             : std::ldexp(double(mantissa + (1u << format.mantissa_bits)),
                                          int(exponent) - bias - format.mantissa_bits);
    table.values.push_back(value);
  }
  const double next_power = std::ldexp(1.0, int(max_exponent) - bias);
  table.overflow_threshold = (table.values.back() + next_power) / 2;
  table.infinity_bits = static_cast<uint16_t>(max_exponent << format.mantissa_bits);
  return table;
}

const HalfTable& table_for(HalfFormat format) {
  static const HalfTable f16 = make_table(kF16Format);
  static const HalfTable bf16 = make_table(kBF16Format);
  return format.exponent_bits == kF16Format.exponent_bits ? f16 : bf16;
}

template <typename T>
T load(const void* p) {
  T value;
  std::memcpy(&value, p, sizeof value);
  return value;
}
template <typename T>
void store(void* p, T value) {
  std::memcpy(p, &value, sizeof value);
}

template <typename T>
T ref_op_int(ReduceOp op, T a, T b) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage:
      return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
    case ReduceOp::kProduct:
      return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
    case ReduceOp::kMin: return a < b ? a : b;
    case ReduceOp::kMax: return a > b ? a : b;
    case ReduceOp::kAdasum: break;  // not elementwise: no kernel reduces it
  }
  return 0;
}

template <typename F>
F ref_op_float(ReduceOp op, F a, F b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<F>::quiet_NaN();
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: return a + b;
    case ReduceOp::kProduct: return a * b;
    case ReduceOp::kMin: return a < b ? a : b;
    case ReduceOp::kMax: return a > b ? a : b;
    case ReduceOp::kAdasum: break;  // not elementwise: no kernel reduces it
  }
  return 0;
}

template <typename T>
void combine_int(ReduceOp op, const void* a, const void* b, void* out) {
  store<T>(out, ref_op_int<T>(op, load<T>(a), load<T>(b)));
}

// bool: 0 is false, any other byte true; min and product are logical and, max logical or, the
// result 0 or 1. Sum and average are undefined: 0xff, a byte the kernels never write.
void combine_bool(ReduceOp op, const void* a, const void* b, void* out) {
  const bool x = load<uint8_t>(a) != 0, y = load<uint8_t>(b) != 0;
  switch (op) {
    case ReduceOp::kMin:
    case ReduceOp::kProduct: return store<uint8_t>(out, x && y ? 1 : 0);
    case ReduceOp::kMax: return store<uint8_t>(out, x || y ? 1 : 0);
    case ReduceOp::kSum:
    case ReduceOp::kAverage:
    case ReduceOp::kAdasum: break;
  }
  store<uint8_t>(out, 0xff);
}

void combine_half(HalfFormat format, ReduceOp op, const void* a, const void* b, void* out) {
  const float x = ref_half_to_float(format, load<uint16_t>(a));
  const float y = ref_half_to_float(format, load<uint16_t>(b));
  store<uint16_t>(out, ref_float_to_half(format, ref_op_float<float>(op, x, y)));
}

template <typename T>
void scale_int(double factor, const void* in, void* out) {
  // Saturating at long long's limits: llround has no value beyond them (kernels.h).
  const double product = static_cast<double>(load<T>(in)) * factor;
  const long long rounded = product >= 0x1p63   ? std::numeric_limits<long long>::max()
                            : product < -0x1p63 ? std::numeric_limits<long long>::min()
                                                : std::llround(product);
  store<T>(out, static_cast<T>(static_cast<uint64_t>(rounded)));
}

}  // namespace

bool ref_half_is_nan(HalfFormat format, uint16_t bits) {
  const HalfTable& table = table_for(format);
  return (bits & 0x7fff) > table.infinity_bits;
}

float ref_half_to_float(HalfFormat format, uint16_t bits) {
  const HalfTable& table = table_for(format);
  const uint16_t magnitude = bits & 0x7fff;
  const bool negative = (bits & 0x8000) != 0;
  double value;
  if (magnitude > table.infinity_bits) return std::numeric_limits<float>::quiet_NaN();
  if (magnitude == table.infinity_bits)
    value = HUGE_VAL;
  else
    value = table.values[magnitude];
  return static_cast<float>(negative ? -value : value);
}

uint16_t ref_float_to_half(HalfFormat format, float value) {
  const HalfTable& table = table_for(format);
  if (std::isnan(value)) return static_cast<uint16_t>(table.infinity_bits | 1);
  const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  const double magnitude = std::fabs(static_cast<double>(value));
  if (magnitude >= table.overflow_threshold) return sign | table.infinity_bits;
  // The last value <= magnitude, and the one above it.
  const auto above = std::upper_bound(table.values.begin(), table.values.end(), magnitude);
  const size_t low = static_cast<size_t>(above - table.values.begin()) - 1;
  if (table.values[low] == magnitude || low + 1 == table.values.size()) {
    return static_cast<uint16_t>(sign | low);
  }
  const double below_gap = magnitude - table.values[low];
  const double above_gap = table.values[low + 1] - magnitude;
  size_t pick = below_gap < above_gap ? low : low + 1;
  if (below_gap == above_gap) pick = (low % 2 == 0) ? low : low + 1;
  return static_cast<uint16_t>(sign | pick);
}

void ref_combine(DataType dtype, ReduceOp op, const void* a, const void* b, void* out) {
  switch (dtype) {
    case DataType::kUint8: return combine_int<uint8_t>(op, a, b, out);
    case DataType::kInt8: return combine_int<int8_t>(op, a, b, out);
    case DataType::kInt32: return combine_int<int32_t>(op, a, b, out);
    case DataType::kInt64: return combine_int<int64_t>(op, a, b, out);
    case DataType::kFloat16: return combine_half(kF16Format, op, a, b, out);
    case DataType::kBFloat16: return combine_half(kBF16Format, op, a, b, out);
    case DataType::kFloat32:
      return store<float>(out, ref_op_float<float>(op, load<float>(a), load<float>(b)));
    case DataType::kFloat64:
      return store<double>(out, ref_op_float<double>(op, load<double>(a), load<double>(b)));
    case DataType::kInt16: return combine_int<int16_t>(op, a, b, out);
    case DataType::kUint16: return combine_int<uint16_t>(op, a, b, out);
    case DataType::kBool: return combine_bool(op, a, b, out);
  }
}

void ref_scale(DataType dtype, double factor, const void* in, void* out) {
  const float f32 = static_cast<float>(factor);
  switch (dtype) {
    case DataType::kUint8: return scale_int<uint8_t>(factor, in, out);
    case DataType::kInt8: return scale_int<int8_t>(factor, in, out);
    case DataType::kInt32: return scale_int<int32_t>(factor, in, out);
    case DataType::kInt64: return scale_int<int64_t>(factor, in, out);
    case DataType::kFloat16:
      return store<uint16_t>(
          out,
          ref_float_to_half(kF16Format, ref_half_to_float(kF16Format, load<uint16_t>(in)) * f32));
    case DataType::kBFloat16:
      return store<uint16_t>(
          out,
          ref_float_to_half(kBF16Format, ref_half_to_float(kBF16Format, load<uint16_t>(in)) * f32));
    case DataType::kFloat32: return store<float>(out, load<float>(in) * f32);
    case DataType::kFloat64: return store<double>(out, load<double>(in) * factor);
    case DataType::kInt16: return scale_int<int16_t>(factor, in, out);
    case DataType::kUint16: return scale_int<uint16_t>(factor, in, out);
    case DataType::kBool:  // Undefined (kernels.h): 0xff, a byte the kernels never write.
      return store<uint8_t>(out, 0xff);
  }
}

bool same_element(DataType dtype, const void* x, const void* y) {
  switch (dtype) {
    case DataType::kFloat16:
      if (ref_half_is_nan(kF16Format, load<uint16_t>(x)))
        return ref_half_is_nan(kF16Format, load<uint16_t>(y));
      break;
    case DataType::kBFloat16:
      if (ref_half_is_nan(kBF16Format, load<uint16_t>(x)))
        return ref_half_is_nan(kBF16Format, load<uint16_t>(y));
      break;
    case DataType::kFloat32:
      if (std::isnan(load<float>(x))) return std::isnan(load<float>(y));
      break;
    case DataType::kFloat64:
      if (std::isnan(load<double>(x))) return std::isnan(load<double>(y));
      break;
    default: break;
  }
  return std::memcmp(x, y, data_type_bytes(dtype)) == 0;
}

std::string element_string(DataType dtype, const void* p) {
  std::ostringstream out;
  switch (dtype) {
    case DataType::kUint8: out << int(load<uint8_t>(p)); break;
    case DataType::kInt8: out << int(load<int8_t>(p)); break;
    case DataType::kInt32: out << load<int32_t>(p); break;
    case DataType::kInt64: out << load<int64_t>(p); break;
    case DataType::kFloat16:
      out << ref_half_to_float(kF16Format, load<uint16_t>(p)) << " (0x" << std::hex
          << load<uint16_t>(p) << ")";
      break;
    case DataType::kBFloat16:
      out << ref_half_to_float(kBF16Format, load<uint16_t>(p)) << " (0x" << std::hex
          << load<uint16_t>(p) << ")";
      break;
    case DataType::kFloat32:
      out << load<float>(p) << " (0x" << std::hex << load<uint32_t>(p) << ")";
      break;
    case DataType::kFloat64:
      out << load<double>(p) << " (0x" << std::hex << load<uint64_t>(p) << ")";
      break;
    case DataType::kInt16: out << load<int16_t>(p); break;
    case DataType::kUint16: out << load<uint16_t>(p); break;
    case DataType::kBool: out << "bool byte " << int(load<uint8_t>(p)); break;
  }
  return out.str();
}

void fill_random(DataType dtype, void* dst, size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> moderate(-4.0, 4.0);
  auto* out = static_cast<uint8_t*>(dst);
  for (size_t i = 0; i < count; ++i) {
    const uint64_t bits = rng();
    const bool use_bits = (bits & 0xf) == 0;  // One in 16 is a raw bit pattern.
    switch (dtype) {
      case DataType::kFloat32:
        if (use_bits)
          store<uint32_t>(out + 4 * i, static_cast<uint32_t>(bits >> 32));
        else
          store<float>(out + 4 * i, static_cast<float>(moderate(rng)));
        break;
      case DataType::kFloat64:
        if (use_bits)
          store<uint64_t>(out + 8 * i, rng());
        else
          store<double>(out + 8 * i, moderate(rng));
        break;
      case DataType::kBool:  // Half false; true mostly as 1, sometimes another non-zero byte.
        if ((bits & 0x10) == 0)
          store<uint8_t>(out + i, 0);
        else
          store<uint8_t>(out + i, use_bits ? static_cast<uint8_t>((bits >> 8) | 1) : 1);
        break;
      default: std::memcpy(out + i * data_type_bytes(dtype), &bits, data_type_bytes(dtype)); break;
    }
  }
}

}  // namespace kernels_test
}  // namespace hora
