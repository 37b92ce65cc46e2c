// Tensors from Python: any object with __dlpack__ (NumPy, PyTorch, JAX, CuPy, TensorFlow's
// tensors), a DLPack capsule (tf.experimental.dlpack.to_dlpack), or a buffer-protocol object
// (bytearray, array.array, memoryview), read as a hora::TensorView without a copy.
//
// Contiguity: hora refuses non-contiguous tensors (kInvalidArgument naming the tensor and its
// strides). Copying would silently break in-place collectives (the result would land in the
// copy), so the choice is the caller's: hora.torch and hora.tensorflow make contiguous copies
// for out-of-place calls themselves.
//
// Device tensors (DLPack kDLCUDA / kDLCUDAManaged, cuda:N) come in as views on that device with
// `stream` as their stream: the framework's stream whose work produces them (an integer from
// the framework, e.g. torch.cuda.current_stream().cuda_stream; 0: the legacy default stream).
// hora's engine waits for that stream's work before reading them (device_executor.h), so
// __dlpack__ is asked for no synchronisation of its own. kDLCUDAHost (pinned) is host memory.
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
// `stream`: a device tensor's stream (above); ignored for host tensors.
StatusOr<ImportedTensor> import_tensor(pybind11::handle obj, const std::string& label,
                                       const char* what, bool writable, void* stream = nullptr);

}  // namespace python
}  // namespace hora
