// TensorView: a non-owning view of a dense, contiguous tensor: data pointer, dtype, shape,
// device, and for a device tensor the framework's stream whose work produces it (the engine
// waits for that stream's work, and only that, before reading the tensor: device_executor.h).
// The memory belongs to the caller (a framework tensor, a test buffer); the view must not
// outlive it. Element and byte counts are computed with overflow checks when the view is made,
// so a view that exists is always consistent. The shape is held inline up to
// SmallShape::kInlineDims dimensions (small_shape.h), so copying a view allocates nothing: the
// engine copies each tensor's views into its queue entry.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hora/data_type.h"
#include "hora/device.h"
#include "hora/small_shape.h"
#include "hora/status.h"

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
  // Reads like a const std::vector<int64_t> and converts to one (small_shape.h).
  const SmallShape& shape() const { return shape_; }
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
  // make() over `rank` dimensions at `dims` (flat() builds no vector).
  static StatusOr<TensorView> make_dims(void* data, DataType dtype, const int64_t* dims,
                                        size_t rank, Device device);

  void* data_ = nullptr;
  DataType dtype_ = DataType::kFloat32;
  SmallShape shape_;
  Device device_;
  void* stream_ = nullptr;
  int64_t element_count_ = 0;
  int64_t byte_count_ = 0;
};

// "[4,5]" for any shape vector.
std::string shape_to_string(const std::vector<int64_t>& shape);
// The same for `count` dimensions at `dims`.
std::string shape_to_string(const int64_t* dims, size_t count);

}  // namespace hora
