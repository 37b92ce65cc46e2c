// Tensors from Python: any object with __dlpack__ (NumPy, PyTorch, JAX, CuPy, TensorFlow's
// tensors), a DLPack capsule (tf.experimental.dlpack.to_dlpack), or a buffer-protocol object
// (bytearray, array.array, memoryview), read as a hora::TensorView without a copy.
//
// Contiguity: hora refuses non-contiguous tensors (kInvalidArgument naming the tensor and its
// strides). Copying would silently break in-place collectives (the result would land in the
// copy), so the choice is the caller's: hora.torch and hora.tensorflow make contiguous copies
// for out-of-place calls themselves.
//
// The returned owner keeps the memory alive (the DLPack capsule, whose destructor runs the
// producer's deleter, or the memoryview holding the buffer export); hold it until the
// collective completed. REQUIRES: the GIL.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "core/base/status.h"
#include "core/base/tensor_view.h"

namespace hora {
namespace python {

struct ImportedTensor {
  TensorView view;
  pybind11::object owner;
};

// `label` names the tensor in errors ("tensor 'loss': output ..."); `what` is its role
// ("input", "output"). `writable`: the collective writes into it (refuses read-only arrays).
StatusOr<ImportedTensor> import_tensor(pybind11::handle obj, const std::string& label,
                                       const char* what, bool writable);

}  // namespace python
}  // namespace hora
