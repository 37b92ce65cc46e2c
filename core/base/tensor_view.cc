#include "hora/tensor_view.h"

#include <limits>

namespace hora {

std::string shape_to_string(const int64_t* dims, size_t count) {
  std::string out = "[";
  for (size_t i = 0; i < count; ++i) {
    if (i) out += ",";
    out += std::to_string(dims[i]);
  }
  return out + "]";
}

std::string shape_to_string(const std::vector<int64_t>& shape) {
  return shape_to_string(shape.data(), shape.size());
}

StatusOr<TensorView> TensorView::make(void* data, DataType dtype, std::vector<int64_t> shape,
                                      Device device) {
  return make_dims(data, dtype, shape.data(), shape.size(), device);
}

StatusOr<TensorView> TensorView::flat(void* data, DataType dtype, int64_t count, Device device) {
  const int64_t dims[1] = {count};
  return make_dims(data, dtype, dims, 1, device);
}

StatusOr<TensorView> TensorView::make_dims(void* data, DataType dtype, const int64_t* dims,
                                           size_t rank, Device device) {
  int64_t count = 1;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t dim = dims[i];
    if (dim < 0)
      return Status::invalid_argument("tensor shape " + shape_to_string(dims, rank) +
                                      " has negative dimension " + std::to_string(dim) +
                                      " at index " + std::to_string(i) +
                                      ": expected every dimension >= 0");
    if (dim != 0 && count > std::numeric_limits<int64_t>::max() / dim)
      return Status::invalid_argument("tensor shape " + shape_to_string(dims, rank) +
                                      " has more elements than fit in int64");
    count *= dim;
  }
  const int64_t elem_bytes = static_cast<int64_t>(data_type_bytes(dtype));
  if (count > std::numeric_limits<int64_t>::max() / elem_bytes)
    return Status::invalid_argument("tensor shape " + shape_to_string(dims, rank) + " of " +
                                    data_type_name(dtype) + " has more bytes than fit in int64");
  if (data == nullptr && count != 0)
    return Status::invalid_argument("tensor of shape " + shape_to_string(dims, rank) +
                                    " has a null data pointer: expected memory for " +
                                    std::to_string(count) + " elements");
  TensorView view;
  view.data_ = data;
  view.dtype_ = dtype;
  view.shape_.assign(dims, rank);
  view.device_ = device;
  view.element_count_ = count;
  view.byte_count_ = count * elem_bytes;
  return view;
}

std::string TensorView::shape_string() const {
  return shape_to_string(shape_.data(), shape_.size());
}

}  // namespace hora
