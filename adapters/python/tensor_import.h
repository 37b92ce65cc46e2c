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

#include "hora/status.h"
#include "hora/tensor_view.h"

namespace hora {
namespace python {

struct ImportedTensor {
  TensorView view;
  pybind11::object owner;
};

// The name of a tensor in errors: `name`, or `prefix` + `name` ("grad/" + "fc1.weight"),
// joined only when an error is made (a successful import builds no string). Refers to the
// caller's strings: valid for the call it is passed to.
class TensorLabel {
 public:
  TensorLabel(const std::string& name) : name_(&name) {}  // implicit: a name is a label
  TensorLabel(const std::string& prefix, const std::string& name)
      : prefix_(&prefix), name_(&name) {}
  std::string str() const { return prefix_ == nullptr ? *name_ : *prefix_ + *name_; }

 private:
  const std::string* prefix_ = nullptr;
  const std::string* name_;
};

// `label` names the tensor in errors ("tensor 'loss': output ..."); `what` is its role
// ("input", "output"). `writable`: the collective writes into it (refuses read-only arrays).
// `stream`: a device tensor's stream (above); ignored for host tensors.
StatusOr<ImportedTensor> import_tensor(pybind11::handle obj, const TensorLabel& label,
                                       const char* what, bool writable, void* stream = nullptr);

// Makes import_tensor export objects whose type is exactly `type` with `exporter(obj)` (a
// DLPack capsule) instead of obj.__dlpack__: hora.torch registers torch._C._to_dlpack_versioned
// for torch.Tensor, whose __dlpack__ runs microseconds of Python checks per call. When the
// exporter raises, import_tensor goes on to __dlpack__ (whose error it reports). Registering
// a type again replaces its exporter. REQUIRES: the GIL.
void register_exporter(pybind11::handle type, pybind11::handle exporter);

// The fast path of a framework's gradient hook: `capsule` (a DLPack capsule the framework's
// exporter just made, e.g. torch._C._to_dlpack_versioned) read as a writable view when it is
// a dense, contiguous tensor of a dtype hora takes, on the host or a CUDA device, not
// read-only. A device view has no stream yet (the caller sets the framework's). Returns false,
// and leaves `view` alone, for anything else (strides, another dtype or device, a consumed or
// foreign capsule): the caller then takes import_tensor's general path, which says what is
// wrong. Makes no Status and no string. REQUIRES: the GIL.
bool read_plain_capsule(pybind11::handle capsule, TensorView* view);

}  // namespace python
}  // namespace hora
