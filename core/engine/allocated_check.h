// check_allocated: whether the view an OutputAllocator (hora/types.h) returned can take a
// collective's result, for the host executor and the device executor alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hora/device.h"
#include "hora/status.h"
#include "hora/tensor_view.h"

namespace hora {
namespace engine {

// OK when `view` is `dtype` x `shape`, `bytes` long, non-null when bytes > 0, and on
// `device` (where the result is: the input's device); else an error naming tensor `name`,
// what the allocator returned and what was expected (or the allocator's own failure).
Status check_allocated(const std::string& name, const StatusOr<TensorView>& view, DataType dtype,
                       const std::vector<int64_t>& shape, size_t bytes, const Device& device);

}  // namespace engine
}  // namespace hora
