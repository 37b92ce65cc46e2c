#include "adapters/python/tensor_import.h"

#include <cstring>
#include <utility>
#include <vector>

#include "adapters/python/dlpack_abi.h"

namespace py = pybind11;

namespace hora {
namespace python {
namespace {

using dlpack::DLDataType;
using dlpack::DLTensor;

std::string prefix(const TensorLabel& label, const char* what) {
  return "tensor '" + label.str() + "': " + what + " ";
}

// The DLPack dtypes hora takes (with one lane), as hora dtypes.
struct DlpackDtype {
  uint8_t code;
  uint8_t bits;
  DataType dtype;
};
constexpr DlpackDtype kDlpackDtypes[] = {
    {dlpack::kDLInt, 8, DataType::kInt8},       {dlpack::kDLInt, 16, DataType::kInt16},
    {dlpack::kDLInt, 32, DataType::kInt32},     {dlpack::kDLInt, 64, DataType::kInt64},
    {dlpack::kDLUInt, 8, DataType::kUint8},     {dlpack::kDLUInt, 16, DataType::kUint16},
    {dlpack::kDLFloat, 16, DataType::kFloat16}, {dlpack::kDLFloat, 32, DataType::kFloat32},
    {dlpack::kDLFloat, 64, DataType::kFloat64}, {dlpack::kDLBfloat, 16, DataType::kBFloat16},
    {dlpack::kDLBool, 8, DataType::kBool},
};

// The hora dtype of a DLPack dtype; false for one hora does not take.
bool dtype_from_dlpack(const DLDataType& t, DataType* out) {
  if (t.lanes != 1) return false;
  for (const DlpackDtype& d : kDlpackDtypes) {
    if (d.code == t.code && d.bits == t.bits) {
      *out = d.dtype;
      return true;
    }
  }
  return false;
}

// The hora device of a DLPack device (pinned host memory is the CPU); false for one hora does
// not take.
bool device_from_dlpack(const dlpack::DLDevice& d, Device* out) {
  switch (d.device_type) {
    case dlpack::kDLCPU:
    case dlpack::kDLCUDAHost: *out = Device::cpu(); return true;
    case dlpack::kDLCUDA:
    case dlpack::kDLCUDAManaged: *out = Device::cuda(d.device_id); return true;
    default: return false;
  }
}

StatusOr<DataType> dtype_of(const DLDataType& t, const TensorLabel& label, const char* what) {
  DataType dtype;
  if (dtype_from_dlpack(t, &dtype)) return dtype;
  return Status::invalid_argument(
      prefix(label, what) + "has DLPack dtype (code " + std::to_string(t.code) + ", bits " +
      std::to_string(t.bits) + ", lanes " + std::to_string(t.lanes) +
      "), which hora does not support; expected one of uint8, int8, int16, uint16, int32, "
      "int64, float16, bfloat16, float32, float64, bool");
}

StatusOr<Device> device_of(const dlpack::DLDevice& d, const TensorLabel& label, const char* what) {
  Device device;
  if (device_from_dlpack(d, &device)) return device;
  return Status::invalid_argument(prefix(label, what) + "lives on DLPack device type " +
                                  std::to_string(d.device_type) +
                                  "; hora takes CPU and CUDA tensors");
}

// Row-major contiguity; dimensions of extent 1 may carry any stride, and a tensor with no
// elements is contiguous.
bool is_contiguous(const int64_t* shape, size_t ndim, const int64_t* strides) {
  if (strides == nullptr) return true;
  for (size_t i = 0; i < ndim; ++i)
    if (shape[i] == 0) return true;
  int64_t expected = 1;
  for (size_t i = ndim; i-- > 0;) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

std::string strides_string(const int64_t* strides, size_t n) {
  std::vector<int64_t> v(strides, strides + n);
  return shape_to_string(v);
}

void* data_of(const DLTensor& t) {
  return t.data == nullptr ? nullptr : static_cast<char*>(t.data) + t.byte_offset;
}

StatusOr<ImportedTensor> from_dltensor(const DLTensor& t, py::object owner,
                                       const TensorLabel& label, const char* what) {
  if (t.ndim < 0)
    return Status::invalid_argument(prefix(label, what) + "has ndim " + std::to_string(t.ndim));
  const size_t ndim = static_cast<size_t>(t.ndim);
  if (!is_contiguous(t.shape, ndim, t.strides))
    return Status::invalid_argument(
        prefix(label, what) + "is not contiguous (shape " + shape_to_string(t.shape, ndim) +
        ", strides " + strides_string(t.strides, ndim) +
        " elements); hora needs a contiguous tensor: pass a contiguous copy (torch: "
        ".contiguous(), NumPy: numpy.ascontiguousarray)");
  HORA_ASSIGN_OR_RETURN(DataType dtype, dtype_of(t.dtype, label, what));
  HORA_ASSIGN_OR_RETURN(Device device, device_of(t.device, label, what));
  StatusOr<TensorView> view =
      TensorView::make(data_of(t), dtype, std::vector<int64_t>(t.shape, t.shape + ndim), device);
  if (!view.ok()) return view.status().with_context(prefix(label, what));
  return ImportedTensor{std::move(view).value(), std::move(owner)};
}

// The Python objects the per-call path uses, made once: interned names and the max_version
// argument (the module is never unloaded, so they are never released).
struct Interned {
  PyObject* dlpack = PyUnicode_InternFromString("__dlpack__");
  PyObject* kwnames = Py_BuildValue("(s)", "max_version");
  PyObject* version = Py_BuildValue("(ii)", 1, 0);
};

const Interned& interned() {
  static const Interned* const names = new Interned();
  return *names;
}

// Calls obj.__dlpack__ (`fn`, looked up by the caller), asking for a versioned capsule (which
// can say read-only) where the producer understands max_version, the legacy one otherwise.
py::object call_dlpack(py::handle fn) {
  PyObject* args[] = {interned().version};
  PyObject* capsule = PyObject_Vectorcall(fn.ptr(), args, 0, interned().kwnames);
  if (capsule != nullptr) return py::reinterpret_steal<py::object>(capsule);
  if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw py::error_already_set();
  PyErr_Clear();
  return py::reinterpret_borrow<py::object>(fn)();
}

StatusOr<ImportedTensor> from_capsule(py::object capsule, const TensorLabel& label,
                                      const char* what, bool writable) {
  PyObject* c = capsule.ptr();
  if (PyCapsule_IsValid(c, "dltensor_versioned")) {
    auto* m = static_cast<dlpack::DLManagedTensorVersioned*>(
        PyCapsule_GetPointer(c, "dltensor_versioned"));
    if (m->version.major > 1)
      return Status::invalid_argument(prefix(label, what) + "came as DLPack " +
                                      std::to_string(m->version.major) +
                                      ".x, newer than the 1.x hora reads");
    if (writable && (m->flags & dlpack::kDLFlagBitmaskReadOnly))
      return Status::invalid_argument(prefix(label, what) +
                                      "is read-only, but the collective writes its "
                                      "result into it");
    return from_dltensor(m->dl_tensor, std::move(capsule), label, what);
  }
  if (PyCapsule_IsValid(c, "dltensor")) {
    auto* m = static_cast<dlpack::DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"));
    return from_dltensor(m->dl_tensor, std::move(capsule), label, what);
  }
  return Status::invalid_argument(prefix(label, what) +
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

StatusOr<ImportedTensor> from_buffer(py::handle obj, const TensorLabel& label, const char* what,
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
  if (!strided_ok ||
      !is_contiguous(shape.data(), shape.size(), strides.empty() ? nullptr : strides.data()))
    return Status::invalid_argument(where + "is not a contiguous buffer (shape " +
                                    shape_to_string(shape) + "); hora needs a contiguous tensor");
  StatusOr<TensorView> view = TensorView::make(info.ptr, dtype, std::move(shape));
  if (!view.ok()) return view.status().with_context(where);
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

StatusOr<ImportedTensor> from_numpy_bfloat16(py::handle obj, const TensorLabel& label,
                                             const char* what, bool writable) {
  HORA_ASSIGN_OR_RETURN(ImportedTensor t,
                        from_buffer(obj.attr("view")("uint16"), label, what, writable));
  HORA_ASSIGN_OR_RETURN(t.view, TensorView::make(t.view.data(), DataType::kBFloat16, t.view.shape(),
                                                 t.view.device()));
  return t;
}

// register_exporter's types and exporters (a handful at most: a linear search). Guarded by
// the GIL; never destroyed (the interpreter may be finalised before static destructors run).
std::vector<std::pair<py::object, py::object>>& exporters() {
  static auto* const registered = new std::vector<std::pair<py::object, py::object>>();
  return *registered;
}

// exporter(obj) when obj's type has one registered, else a null object (also when the
// exporter raised: __dlpack__ then says why).
py::object export_registered(py::handle obj) {
  PyObject* type = reinterpret_cast<PyObject*>(Py_TYPE(obj.ptr()));
  for (const auto& [t, exporter] : exporters()) {
    if (t.ptr() != type) continue;
    PyObject* arg = obj.ptr();
    PyObject* capsule = PyObject_Vectorcall(exporter.ptr(), &arg, 1, nullptr);
    if (capsule == nullptr) PyErr_Clear();
    return py::reinterpret_steal<py::object>(capsule);
  }
  return py::object();
}

// obj.__dlpack__, or a null object when it has none.
py::object dlpack_method(py::handle obj) {
  PyObject* fn = PyObject_GetAttr(obj.ptr(), interned().dlpack);
  if (fn == nullptr) PyErr_Clear();
  return py::reinterpret_steal<py::object>(fn);
}

StatusOr<ImportedTensor> import_any(py::handle obj, const TensorLabel& label, const char* what,
                                    bool writable) {
  if (obj.is_none())
    return Status::invalid_argument(prefix(label, what) + "is None; expected a tensor");
  if (PyCapsule_CheckExact(obj.ptr()))
    return from_capsule(py::reinterpret_borrow<py::object>(obj), label, what, writable);
  if (py::object capsule = export_registered(obj))
    return from_capsule(std::move(capsule), label, what, writable);
  if (py::object fn = dlpack_method(obj)) {
    py::object capsule;
    try {
      capsule = call_dlpack(fn);
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

StatusOr<ImportedTensor> import_tensor(py::handle obj, const TensorLabel& label, const char* what,
                                       bool writable, void* stream) {
  HORA_ASSIGN_OR_RETURN(ImportedTensor t, import_any(obj, label, what, writable));
  if (t.view.device().is_cuda()) t.view = t.view.with_stream(stream);
  return t;
}

void register_exporter(py::handle type, py::handle exporter) {
  auto& registered = exporters();
  for (auto& [t, e] : registered) {
    if (!t.is(type)) continue;
    e = py::reinterpret_borrow<py::object>(exporter);
    return;
  }
  registered.emplace_back(py::reinterpret_borrow<py::object>(type),
                          py::reinterpret_borrow<py::object>(exporter));
}

bool read_plain_capsule(py::handle capsule, TensorView* view) {
  PyObject* c = capsule.ptr();
  const DLTensor* t = nullptr;
  if (PyCapsule_IsValid(c, "dltensor_versioned")) {
    auto* m = static_cast<dlpack::DLManagedTensorVersioned*>(
        PyCapsule_GetPointer(c, "dltensor_versioned"));
    if (m->version.major > 1 || (m->flags & dlpack::kDLFlagBitmaskReadOnly)) return false;
    t = &m->dl_tensor;
  } else if (PyCapsule_IsValid(c, "dltensor")) {
    t = &static_cast<dlpack::DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"))->dl_tensor;
  } else {
    return false;
  }
  Device device;
  DataType dtype;
  if (!device_from_dlpack(t->device, &device) || t->ndim < 0 ||
      !dtype_from_dlpack(t->dtype, &dtype) ||
      !is_contiguous(t->shape, static_cast<size_t>(t->ndim), t->strides))
    return false;
  StatusOr<TensorView> v = TensorView::make(
      data_of(*t), dtype, std::vector<int64_t>(t->shape, t->shape + t->ndim), device);
  if (!v.ok()) return false;
  *view = std::move(v).value();
  return true;
}

}  // namespace python
}  // namespace hora
