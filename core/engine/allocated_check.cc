#include "core/engine/allocated_check.h"

namespace hora {
namespace engine {

Status check_allocated(const std::string& name, const StatusOr<TensorView>& view, DataType dtype,
                       const std::vector<int64_t>& shape, size_t bytes, const Device& device) {
  const std::string who = "tensor '" + name + "': output allocator ";
  if (!view.ok()) return Status(view.status().code(), who + "failed: " + view.status().message());
  const TensorView& v = view.value();
  if (v.dtype() != dtype || v.shape() != shape)
    return Status::invalid_argument(who + "returned " + data_type_name(v.dtype()) +
                                    v.shape_string() + " but the result is " +
                                    data_type_name(dtype) + shape_to_string(shape));
  if (v.device() != device)
    return Status::invalid_argument(
        who + "returned memory on " + v.device().to_string() + " but the result is " +
        (device.is_cpu() ? std::string("on the host") : "on " + device.to_string()) +
        " (the input's device)");
  if (static_cast<size_t>(v.byte_count()) != bytes || (bytes > 0 && v.data() == nullptr))
    return Status::invalid_argument(who + "returned " + std::to_string(v.byte_count()) +
                                    " bytes at " + (v.data() ? "a buffer" : "null") +
                                    ", expected " + std::to_string(bytes) + " bytes");
  return Status::OK();
}

}  // namespace engine
}  // namespace hora
