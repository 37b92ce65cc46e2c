// TensorView: a non-owning view of a dense, contiguous tensor: data pointer, dtype, shape,
// device, and for a device tensor the framework's stream whose work produces it (the engine
// waits for that stream's work, and only that, before reading the tensor: device_executor.h).
// The memory belongs to the caller (a framework tensor, a test buffer); the view must not
// outlive it. Element and byte counts are computed with overflow checks when the view is made,
// so a view that exists is always consistent.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/base/data_type.h"
#include "core/base/device.h"
#include "core/base/status.h"

namespace hora {

class TensorView {
 public:
  TensorView() = default;

  // Builds a view; fails on a negative dimension, or when the element or byte count
  // overflows int64. A null `data` is allowed only for zero elements.
  static StatusOr<TensorView> make(void* data, DataType dtype, std::vector<int64_t> shape,
                                   Device device = Device::cpu());
  // A flat view of `count` elements.
  static StatusOr<TensorView> flat(void* data, DataType dtype, int64_t count,
                                   Device device = Device::cpu());

  void* data() const { return data_; }
  DataType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const Device& device() const { return device_; }
  int64_t element_count() const { return element_count_; }
  int64_t byte_count() const { return byte_count_; }
  // The framework's stream of a device tensor (cudaStream_t, opaque: device_runtime.h);
  // nullptr: the device's default stream. Ignored for host tensors.
  void* stream() const { return stream_; }
  // This view with `stream` as its stream.
  TensorView with_stream(void* stream) const {
    TensorView v = *this;
    v.stream_ = stream;
    return v;
  }
  // "[4,5]".
  std::string shape_string() const;

 private:
  void* data_ = nullptr;
  DataType dtype_ = DataType::kFloat32;
  std::vector<int64_t> shape_;
  Device device_;
  void* stream_ = nullptr;
  int64_t element_count_ = 0;
  int64_t byte_count_ = 0;
};

// "[4,5]" for any shape vector.
std::string shape_to_string(const std::vector<int64_t>& shape);

}  // namespace hora
