#include "tests/collectives/backends/mpi/mpi_test_util.h"

#include <cmath>
#include <cstring>

#include "kernels/kernels.h"

namespace hora {
namespace collectives {
namespace mpi_test {

template <typename T>
T load(const void* data, size_t i) {
  T value;
  std::memcpy(&value, static_cast<const char*>(data) + i * sizeof(T), sizeof(T));
  return value;
}

template <typename T>
void store(void* data, size_t i, T value) {
  std::memcpy(static_cast<char*>(data) + i * sizeof(T), &value, sizeof(T));
}

double get_element(const void* data, size_t i, DataType dtype) {
  switch (dtype) {
    case DataType::kUint8: return load<uint8_t>(data, i);
    case DataType::kInt8: return load<int8_t>(data, i);
    case DataType::kInt32: return load<int32_t>(data, i);
    case DataType::kInt64: return static_cast<double>(load<int64_t>(data, i));
    case DataType::kFloat16: return kernels::f16_to_f32(load<uint16_t>(data, i));
    case DataType::kBFloat16: return kernels::bf16_to_f32(load<uint16_t>(data, i));
    case DataType::kFloat32: return load<float>(data, i);
    case DataType::kFloat64: return load<double>(data, i);
    case DataType::kInt16: return load<int16_t>(data, i);
    case DataType::kUint16: return load<uint16_t>(data, i);
    case DataType::kBool: return load<uint8_t>(data, i);
  }
  return 0;
}

void set_element(void* data, size_t i, DataType dtype, double value) {
  switch (dtype) {
    case DataType::kUint8: return store<uint8_t>(data, i, static_cast<uint8_t>(value));
    case DataType::kInt8: return store<int8_t>(data, i, static_cast<int8_t>(value));
    case DataType::kInt32: return store<int32_t>(data, i, static_cast<int32_t>(value));
    case DataType::kInt64: return store<int64_t>(data, i, static_cast<int64_t>(value));
    case DataType::kFloat16:
      return store<uint16_t>(data, i, kernels::f32_to_f16(static_cast<float>(value)));
    case DataType::kBFloat16:
      return store<uint16_t>(data, i, kernels::f32_to_bf16(static_cast<float>(value)));
    case DataType::kFloat32: return store<float>(data, i, static_cast<float>(value));
    case DataType::kFloat64: return store<double>(data, i, value);
    case DataType::kInt16: return store<int16_t>(data, i, static_cast<int16_t>(value));
    case DataType::kUint16: return store<uint16_t>(data, i, static_cast<uint16_t>(value));
    case DataType::kBool: return store<uint8_t>(data, i, static_cast<uint8_t>(value));
  }
}

double tolerance(DataType dtype, double expected) {
  const double magnitude = std::fabs(expected) + 1e-30;
  switch (dtype) {
    case DataType::kFloat16: return magnitude * 2e-3;   // 11-bit significand
    case DataType::kBFloat16: return magnitude * 1e-2;  // 8-bit significand
    case DataType::kFloat32: return magnitude * 1e-6;
    case DataType::kFloat64: return magnitude * 1e-12;
    default: return 0.0;
  }
}

void MpiTest::create(const MpiOptions& options) {
  comm_.reset();
  auto created = MpiCommunicator::create(options);
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  comm_ = std::move(created).value();
  rank_ = comm_->rank();
  size_ = comm_->size();
}

}  // namespace mpi_test
}  // namespace collectives
}  // namespace hora
