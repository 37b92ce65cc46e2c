#include "adapters/python/py_handle.h"

#include <pybind11/stl.h>

#include <chrono>

#include "adapters/python/errors.h"
#include "adapters/python/waiting.h"

namespace py = pybind11;

namespace hora {
namespace python {

PyHandle::PyHandle(Handle handle, std::shared_ptr<Flight> flight)
    : handle_(std::move(handle)), flight_(std::move(flight)) {}

py::object PyHandle::wait() {
  const bool unbounded = flight_->kind == "barrier" || flight_->kind == "join";
  check(wait_interruptibly(handle_, unbounded ? 0.0 : job_timeout_s()));
  drain();
  return result();
}

py::object PyHandle::wait_on_stream(uintptr_t stream) {
  if (flight_->device < 0) return wait();
  Handle h = handle_;  // the lambdas run without the GIL: no Python object in them
  void* s = reinterpret_cast<void*>(stream);
  Status last;
  check(wait_sliced(
      [&h, &last, s](std::chrono::milliseconds t) {
        last = h.wait_on_stream(s, t);
        // Completed just after the slice ran out: the real outcome, at once.
        if (last.code() == StatusCode::kTimeout && h.poll())
          last = h.wait_on_stream(s, std::chrono::milliseconds(0));
        return last;
      },
      [&h, &last] { return last.code() == StatusCode::kTimeout && !h.poll(); }, job_timeout_s(),
      "tensor '" + h.name() + "'"));
  drain();
  return result();
}

py::object PyHandle::result() {
  const std::string& kind = flight_->kind;
  if (kind == "allgather" || kind == "reducescatter") return flight_->allocated;
  if (kind == "alltoall")
    return py::make_tuple(flight_->allocated, py::cast(handle_.received_splits()));
  if (kind == "join") return py::int_(handle_.last_joined());
  if (kind == "barrier") return py::none();
  return flight_->result;
}

PyHandle make_handle(Handle handle, std::shared_ptr<Flight> flight) {
  track(handle, flight);
  // Refused at enqueue (a name still in flight on this rank, bad input): the handle is failed
  // already, and Horovod raises ValueError at the call, which scripts rely on. Raised here
  // (InvalidArgumentError is a ValueError) for every collective of every Python adapter.
  if (handle.poll()) {
    Status s = handle.wait(std::chrono::milliseconds(0));
    if (s.code() == StatusCode::kInvalidArgument) {
      drain();
      throw_status(s);
    }
  }
  return PyHandle(std::move(handle), std::move(flight));
}

void bind_handle(py::module_& m) {
  py::class_<PyHandle>(m, "Handle",
                       "A collective in flight. hora.synchronize(handle) waits for it and "
                       "returns its result; hora.poll(handle) tells whether it completed.")
      .def_property_readonly("name", &PyHandle::name, "The tensor's name.")
      .def_property_readonly("kind", &PyHandle::kind, "The collective: allreduce, ...")
      .def("poll", &PyHandle::poll, "True once the collective completed (never blocks).")
      .def("wait", &PyHandle::wait,
           "Waits (releasing the GIL, interruptible by Ctrl-C, at most HORA_TIMEOUT_S) and "
           "returns the result; raises hora.HoraError subclasses on failure.")
      .def("wait_on_stream", &PyHandle::wait_on_stream, py::arg("stream"),
           "GPU tensors: makes `stream` (an integer cudaStream_t, 0: default) wait for the "
           "result on the GPU instead of the host waiting for the GPU, and returns the result "
           "as wait() does. Host tensors: wait().")
      .def_property_readonly("device", &PyHandle::device,
                             "The CUDA ordinal of the collective's tensors; -1 for host ones.")
      .def("__repr__", [](const PyHandle& h) {
        return "<hora.Handle " + h.kind() + " '" + h.name() + "'" +
               (h.poll() ? " done>" : " pending>");
      });
}

}  // namespace python
}  // namespace hora
