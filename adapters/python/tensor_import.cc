#include "adapters/python/tensor_import.h"

#include <cstring>
#include <vector>

#include "adapters/python/dlpack_abi.h"

namespace py = pybind11;

namespace hora {
namespace python {
namespace {

using dlpack::DLDataType;
using dlpack::DLTensor;

std::string prefix(const std::string& label, const char* what) {
  return "tensor '" + label + "': " + what + " ";
}

StatusOr<DataType> dtype_of(const DLDataType& t, const std::string& where) {
  if (t.lanes == 1) {
    switch (t.code) {
      case dlpack::kDLInt:
        if (t.bits == 8) return DataType::kInt8;
        if (t.bits == 16) return DataType::kInt16;
        if (t.bits == 32) return DataType::kInt32;
        if (t.bits == 64) return DataType::kInt64;
        break;
      case dlpack::kDLUInt:
        if (t.bits == 8) return DataType::kUint8;
        if (t.bits == 16) return DataType::kUint16;
        break;
      case dlpack::kDLFloat:
        if (t.bits == 16) return DataType::kFloat16;
        if (t.bits == 32) return DataType::kFloat32;
        if (t.bits == 64) return DataType::kFloat64;
        break;
      case dlpack::kDLBfloat:
        if (t.bits == 16) return DataType::kBFloat16;
        break;
      case dlpack::kDLBool:
        if (t.bits == 8) return DataType::kBool;
        break;
      default: break;
    }
  }
  return Status::invalid_argument(
      where + "has DLPack dtype (code " + std::to_string(t.code) + ", bits " +
      std::to_string(t.bits) + ", lanes " + std::to_string(t.lanes) +
      "), which hora does not support; expected one of uint8, int8, int16, uint16, int32, "
      "int64, float16, bfloat16, float32, float64, bool");
}

StatusOr<Device> device_of(const dlpack::DLDevice& d, const std::string& where) {
  switch (d.device_type) {
    case dlpack::kDLCPU:
    case dlpack::kDLCUDAHost: return Device::cpu();
    case dlpack::kDLCUDA:
    case dlpack::kDLCUDAManaged: return Device::cuda(d.device_id);
    default:
      return Status::invalid_argument(where + "lives on DLPack device type " +
                                      std::to_string(d.device_type) +
                                      "; hora takes CPU and CUDA tensors");
  }
}

// Row-major contiguity; dimensions of extent 1 may carry any stride, and a tensor with no
// elements is contiguous.
bool is_contiguous(const std::vector<int64_t>& shape, const int64_t* strides) {
  if (strides == nullptr) return true;
  int64_t expected = 1;
  for (int64_t d : shape)
    if (d == 0) return true;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

std::string strides_string(const int64_t* strides, size_t n) {
  std::vector<int64_t> v(strides, strides + n);
  return shape_to_string(v);
}

StatusOr<ImportedTensor> from_dltensor(const DLTensor& t, py::object owner,
                                       const std::string& label, const char* what) {
  const std::string where = prefix(label, what);
  if (t.ndim < 0) return Status::invalid_argument(where + "has ndim " + std::to_string(t.ndim));
  std::vector<int64_t> shape(t.shape, t.shape + t.ndim);
  if (!is_contiguous(shape, t.strides))
    return Status::invalid_argument(
        where + "is not contiguous (shape " + shape_to_string(shape) + ", strides " +
        strides_string(t.strides, shape.size()) +
        " elements); hora needs a contiguous tensor: pass a contiguous copy (torch: "
        ".contiguous(), NumPy: numpy.ascontiguousarray)");
  HORA_ASSIGN_OR_RETURN(DataType dtype, dtype_of(t.dtype, where));
  HORA_ASSIGN_OR_RETURN(Device device, device_of(t.device, where));
  void* data = t.data == nullptr ? nullptr : static_cast<char*>(t.data) + t.byte_offset;
  StatusOr<TensorView> view = TensorView::make(data, dtype, std::move(shape), device);
  if (!view.is_ok()) return view.status().with_context(where);
  return ImportedTensor{std::move(view).value(), std::move(owner)};
}

// Calls obj.__dlpack__, asking for a versioned capsule (which can say read-only) where the
// producer understands max_version, the legacy one otherwise.
py::object call_dlpack(py::handle obj) {
  py::object fn = obj.attr("__dlpack__");
  try {
    return fn(py::arg("max_version") = py::make_tuple(1, 0));
  } catch (py::error_already_set& e) {
    if (!e.matches(PyExc_TypeError)) throw;
  }
  return fn();
}

StatusOr<ImportedTensor> from_capsule(py::object capsule, const std::string& label,
                                      const char* what, bool writable) {
  const std::string where = prefix(label, what);
  PyObject* c = capsule.ptr();
  if (PyCapsule_IsValid(c, "dltensor_versioned")) {
    auto* m = static_cast<dlpack::DLManagedTensorVersioned*>(
        PyCapsule_GetPointer(c, "dltensor_versioned"));
    if (m->version.major > 1)
      return Status::invalid_argument(where + "came as DLPack " + std::to_string(m->version.major) +
                                      ".x, newer than the 1.x hora reads");
    if (writable && (m->flags & dlpack::kDLFlagBitmaskReadOnly))
      return Status::invalid_argument(where +
                                      "is read-only, but the collective writes its "
                                      "result into it");
    return from_dltensor(m->dl_tensor, std::move(capsule), label, what);
  }
  if (PyCapsule_IsValid(c, "dltensor")) {
    auto* m = static_cast<dlpack::DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"));
    return from_dltensor(m->dl_tensor, std::move(capsule), label, what);
  }
  return Status::invalid_argument(where +
                                  "is a capsule that is not an unused DLPack tensor "
                                  "(a DLPack capsule can be consumed only once)");
}

StatusOr<DataType> dtype_of_buffer(const py::buffer_info& info, const std::string& where) {
  if (info.format.empty())
    return Status::invalid_argument(where + "exposes a buffer without a format");
  const char kind = info.format.back();
  const py::ssize_t bytes = info.itemsize;
  switch (kind) {
    case '?': return DataType::kBool;
    case 'e': return DataType::kFloat16;
    case 'f': return DataType::kFloat32;
    case 'd': return DataType::kFloat64;
    case 'b': return DataType::kInt8;
    case 'B': return DataType::kUint8;
    case 'h': return DataType::kInt16;
    case 'H': return DataType::kUint16;
    case 'i':
    case 'l':
    case 'q':
      if (bytes == 4) return DataType::kInt32;
      if (bytes == 8) return DataType::kInt64;
      break;
    default: break;
  }
  return Status::invalid_argument(where + "has buffer format '" + info.format + "' (" +
                                  std::to_string(bytes) +
                                  " bytes per item), which hora does not support");
}

StatusOr<ImportedTensor> from_buffer(py::handle obj, const std::string& label, const char* what,
                                     bool writable) {
  const std::string where = prefix(label, what);
  py::memoryview mv = py::reinterpret_steal<py::memoryview>(PyMemoryView_FromObject(obj.ptr()));
  if (!mv) throw py::error_already_set();
  py::buffer_info info = py::reinterpret_borrow<py::buffer>(mv).request(false);
  if (writable && info.readonly)
    return Status::invalid_argument(where +
                                    "is a read-only buffer, but the collective writes "
                                    "its result into it");
  HORA_ASSIGN_OR_RETURN(DataType dtype, dtype_of_buffer(info, where));
  std::vector<int64_t> shape(info.shape.begin(), info.shape.end());
  std::vector<int64_t> strides;
  bool strided_ok = true;
  for (py::ssize_t s : info.strides) {
    if (s % info.itemsize != 0) strided_ok = false;
    strides.push_back(s / info.itemsize);
  }
  if (!strided_ok || !is_contiguous(shape, strides.empty() ? nullptr : strides.data()))
    return Status::invalid_argument(where + "is not a contiguous buffer (shape " +
                                    shape_to_string(shape) + "); hora needs a contiguous tensor");
  StatusOr<TensorView> view = TensorView::make(info.ptr, dtype, std::move(shape));
  if (!view.is_ok()) return view.status().with_context(where);
  return ImportedTensor{std::move(view).value(), std::move(mv)};
}

// NumPy arrays of ml_dtypes' bfloat16 export neither through DLPack nor with a buffer
// format: read them through a uint16 view of the same memory.
bool is_numpy_bfloat16(py::handle obj) {
  if (!py::hasattr(obj, "dtype") || !py::hasattr(obj, "view")) return false;
  py::object dtype = obj.attr("dtype");
  return py::hasattr(dtype, "name") &&
         py::str(dtype.attr("name")).cast<std::string>() == "bfloat16" &&
         py::hasattr(dtype, "itemsize") && dtype.attr("itemsize").cast<int>() == 2;
}

StatusOr<ImportedTensor> from_numpy_bfloat16(py::handle obj, const std::string& label,
                                             const char* what, bool writable) {
  HORA_ASSIGN_OR_RETURN(ImportedTensor t,
                        from_buffer(obj.attr("view")("uint16"), label, what, writable));
  HORA_ASSIGN_OR_RETURN(t.view, TensorView::make(t.view.data(), DataType::kBFloat16, t.view.shape(),
                                                 t.view.device()));
  return t;
}

StatusOr<ImportedTensor> import_any(py::handle obj, const std::string& label, const char* what,
                                    bool writable) {
  if (obj.is_none())
    return Status::invalid_argument(prefix(label, what) + "is None; expected a tensor");
  if (PyCapsule_CheckExact(obj.ptr()))
    return from_capsule(py::reinterpret_borrow<py::object>(obj), label, what, writable);
  if (py::hasattr(obj, "__dlpack__")) {
    py::object capsule;
    try {
      capsule = call_dlpack(obj);
    } catch (py::error_already_set& e) {
      // Checked only on this slow path: reading a NumPy dtype's name costs microseconds.
      if (is_numpy_bfloat16(obj)) return from_numpy_bfloat16(obj, label, what, writable);
      return Status::invalid_argument(prefix(label, what) +
                                      "could not be exported through "
                                      "DLPack: " +
                                      e.what());
    }
    return from_capsule(std::move(capsule), label, what, writable);
  }
  if (PyObject_CheckBuffer(obj.ptr())) return from_buffer(obj, label, what, writable);
  return Status::invalid_argument(prefix(label, what) + "is a " +
                                  std::string(py::str(py::type::of(obj).attr("__name__"))) +
                                  ", which is not a tensor (no __dlpack__, no buffer protocol)");
}

}  // namespace

StatusOr<ImportedTensor> import_tensor(py::handle obj, const std::string& label, const char* what,
                                       bool writable, void* stream) {
  HORA_ASSIGN_OR_RETURN(ImportedTensor t, import_any(obj, label, what, writable));
  if (t.view.device().is_cuda()) t.view = t.view.with_stream(stream);
  return t;
}

}  // namespace python
}  // namespace hora
