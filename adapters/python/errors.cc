#include "adapters/python/errors.h"

#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace hora {
namespace python {

const char* exception_name(StatusCode code) {
  switch (code) {
    case StatusCode::kInvalidArgument: return "InvalidArgumentError";
    case StatusCode::kFailedPrecondition: return "FailedPreconditionError";
    case StatusCode::kMismatch: return "MismatchError";
    case StatusCode::kTimeout: return "HoraTimeoutError";
    case StatusCode::kRemote: return "RemoteError";
    case StatusCode::kIo: return "HoraIOError";
    case StatusCode::kUnimplemented: return "UnimplementedError";
    case StatusCode::kInternal: return "InternalError";
    case StatusCode::kOk: break;
  }
  return "HoraError";
}

void throw_status(const Status& status) {
  // The classes are Python's (hora/errors.py), so that they can also derive from ValueError,
  // TimeoutError, ...; looked up on each error, which is off the hot path.
  py::object cls = py::module_::import("hora.errors").attr(exception_name(status.code()));
  PyErr_SetString(cls.ptr(), status.message().c_str());
  throw py::error_already_set();
}

}  // namespace python
}  // namespace hora
