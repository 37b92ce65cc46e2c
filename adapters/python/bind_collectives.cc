// hora._core's collectives: allreduce, grouped allreduce, allgather, broadcast, alltoall,
// reducescatter, each returning a Handle at once (the blocking forms are Python's, in
// hora/ops.py: the `_async` call, then synchronize). Tensors come in through DLPack or the
// buffer protocol (tensor_import.h); every buffer's owner goes into the collective's Flight.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "adapters/python/binding.h"
#include "adapters/python/errors.h"
#include "adapters/python/flight.h"
#include "adapters/python/py_handle.h"
#include "adapters/python/tensor_import.h"
#include "hora/hora.h"

namespace py = pybind11;

namespace hora {
namespace python {
namespace {

std::string label_of(const std::string& name, const char* kind) {
  return name.empty() ? std::string("<unnamed ") + kind + ">" : name;
}

// `stream`: a device tensor's stream (tensor_import.h), as the integer Python passes.
TensorView import_into(const std::shared_ptr<Flight>& flight, py::handle obj,
                       const std::string& label, const char* what, bool writable,
                       uintptr_t stream = 0) {
  ImportedTensor t =
      check(import_tensor(obj, label, what, writable, reinterpret_cast<void*>(stream)));
  flight->keep.push_back(std::move(t.owner));
  if (t.view.device().is_cuda()) flight->device = t.view.device().index;
  return t.view;
}

std::shared_ptr<Flight> new_flight(const char* kind) {
  drain();
  auto flight = std::make_shared<Flight>();
  flight->kind = kind;
  return flight;
}

PyHandle allreduce_async(py::handle tensor, py::handle output, const std::string& name, ReduceOp op,
                         double prescale, double postscale, Compression compression,
                         uintptr_t stream, int process_set) {
  auto flight = new_flight("allreduce");
  const std::string label = label_of(name, "allreduce");
  const bool in_place = output.is_none() || output.is(tensor);
  TensorView in = import_into(flight, tensor, label, "input", in_place, stream);
  TensorView out = in_place ? in : import_into(flight, output, label, "output", true, stream);
  flight->result = py::reinterpret_borrow<py::object>(in_place ? tensor : output);
  AllreduceOptions options{op, prescale, postscale, compression, process_set};
  return make_handle(hora::allreduce_async(name, in, out, options), flight);
}

PyHandle grouped_allreduce_async(const std::vector<py::object>& tensors,
                                 const std::vector<py::object>& outputs,
                                 const std::vector<std::string>& names, ReduceOp op,
                                 double prescale, double postscale, Compression compression,
                                 uintptr_t stream, int process_set) {
  auto flight = new_flight("grouped_allreduce");
  if (tensors.size() != outputs.size() || tensors.size() != names.size())
    throw_status(Status::invalid_argument(
        "grouped allreduce needs as many outputs and names as tensors; got " +
        std::to_string(tensors.size()) + " tensors, " + std::to_string(outputs.size()) +
        " outputs, " + std::to_string(names.size()) + " names"));
  std::vector<TensorView> ins, outs;
  py::list results;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const std::string label = label_of(names[i], "allreduce");
    const bool in_place = outputs[i].is_none() || outputs[i].is(tensors[i]);
    ins.push_back(import_into(flight, tensors[i], label, "input", in_place, stream));
    outs.push_back(in_place ? ins.back()
                            : import_into(flight, outputs[i], label, "output", true, stream));
    results.append(in_place ? tensors[i] : outputs[i]);
  }
  flight->result = results;
  AllreduceOptions options{op, prescale, postscale, compression, process_set};
  return make_handle(hora::grouped_allreduce_async(names, ins, outs, options), flight);
}

// A collective whose output the caller's `allocator` makes once negotiation told its shape
// (allgather, alltoall, reducescatter): its flight, holding the allocator and the input's
// owner, its label and its input.
struct AllocatingCall {
  std::shared_ptr<Flight> flight;
  std::string label;
  TensorView in;

  AllocatingCall(const char* kind, py::handle tensor, py::object allocator, const std::string& name,
                 uintptr_t stream)
      : flight(new_flight(kind)),
        label(label_of(name, kind)),
        in(import_into(flight, tensor, label, "input", false, stream)) {
    flight->allocator = std::move(allocator);
  }

  OutputAllocator output_allocator() const { return python_allocator(flight, label); }
  // The handle of the enqueued collective. Tracked before this returns to Python: the
  // allocator, which takes the GIL, may run on the engine thread at once.
  PyHandle handle(Handle h) const { return make_handle(std::move(h), flight); }
};

PyHandle allgather_async(py::handle tensor, py::object allocator, const std::string& name,
                         uintptr_t stream, int process_set) {
  AllocatingCall call("allgather", tensor, std::move(allocator), name, stream);
  return call.handle(hora::allgather_async(name, call.in, call.output_allocator(), process_set));
}

PyHandle broadcast_async(py::handle tensor, int root, const std::string& name, uintptr_t stream,
                         int process_set) {
  auto flight = new_flight("broadcast");
  const std::string label = label_of(name, "broadcast");
  TensorView t = import_into(flight, tensor, label, "tensor", true, stream);
  flight->result = py::reinterpret_borrow<py::object>(tensor);
  return make_handle(hora::broadcast_async(name, t, root, process_set), flight);
}

PyHandle alltoall_async(py::handle tensor, const std::vector<int64_t>& splits, py::object allocator,
                        const std::string& name, uintptr_t stream, int process_set) {
  AllocatingCall call("alltoall", tensor, std::move(allocator), name, stream);
  return call.handle(
      hora::alltoall_async(name, call.in, splits, call.output_allocator(), process_set));
}

PyHandle reducescatter_async(py::handle tensor, py::object allocator, const std::string& name,
                             ReduceOp op, uintptr_t stream, double prescale, double postscale,
                             int process_set) {
  AllocatingCall call("reducescatter", tensor, std::move(allocator), name, stream);
  return call.handle(hora::reducescatter_async(name, call.in, op, prescale, postscale,
                                               call.output_allocator(), process_set));
}

// Allgathers or reducescatters (`kind`) of `tensors` enqueued together through `enqueue`
// (hora::*_async_batch of their inputs and allocators): one call, so one flight, per tensor;
// a handle each, raising at once as make_handle does when the batch was refused.
template <typename Enqueue>
std::vector<PyHandle> batch_async(const char* kind, const std::vector<py::object>& tensors,
                                  const std::vector<py::object>& allocators,
                                  const std::vector<std::string>& names, uintptr_t stream,
                                  const Enqueue& enqueue) {
  if (tensors.size() != allocators.size() || tensors.size() != names.size())
    throw_status(Status::invalid_argument(
        std::string("grouped ") + kind + " needs as many allocators and names as tensors; got " +
        std::to_string(tensors.size()) + " tensors, " + std::to_string(allocators.size()) +
        " allocators, " + std::to_string(names.size()) + " names"));
  std::vector<AllocatingCall> calls;
  std::vector<TensorView> ins;
  std::vector<OutputAllocator> outs;
  for (size_t i = 0; i < tensors.size(); ++i) {
    calls.emplace_back(kind, tensors[i], allocators[i], names[i], stream);
    ins.push_back(calls.back().in);
    outs.push_back(calls.back().output_allocator());
  }
  std::vector<Handle> handles = enqueue(ins, std::move(outs));
  std::vector<PyHandle> result;
  for (size_t i = 0; i < handles.size(); ++i) result.push_back(calls[i].handle(handles[i]));
  return result;
}

}  // namespace

void bind_collectives(py::module_& m) {
  m.def(
      "allgather_async_batch",
      [](const std::vector<py::object>& tensors, const std::vector<py::object>& allocators,
         const std::vector<std::string>& names, uintptr_t stream, int process_set) {
        return batch_async(
            "allgather", tensors, allocators, names, stream,
            [&](const std::vector<TensorView>& ins, std::vector<OutputAllocator> outs) {
              return hora::allgather_async_batch(names, ins, std::move(outs), process_set);
            });
      },
      py::arg("tensors"), py::arg("allocators"), py::arg("names"), py::arg("stream") = 0,
      py::arg("process_set") = 0,
      "Enqueues an allgather of each tensor together (all or none); a handle each.");
  m.def(
      "reducescatter_async_batch",
      [](const std::vector<py::object>& tensors, const std::vector<py::object>& allocators,
         const std::vector<std::string>& names, ReduceOp op, double prescale, double postscale,
         uintptr_t stream, int process_set) {
        return batch_async(
            "reducescatter", tensors, allocators, names, stream,
            [&](const std::vector<TensorView>& ins, std::vector<OutputAllocator> outs) {
              return hora::reducescatter_async_batch(names, ins, op, prescale, postscale,
                                                     std::move(outs), process_set);
            });
      },
      py::arg("tensors"), py::arg("allocators"), py::arg("names"), py::arg("op"),
      py::arg("prescale") = 1.0, py::arg("postscale") = 1.0, py::arg("stream") = 0,
      py::arg("process_set") = 0,
      "Enqueues a reducescatter of each tensor together (all or none); a handle each.");
  m.def("allreduce_async", &allreduce_async, py::arg("tensor"), py::arg("output"), py::arg("name"),
        py::arg("op"), py::arg("prescale"), py::arg("postscale"), py::arg("compression"),
        py::arg("stream") = 0, py::arg("process_set") = 0,
        "Enqueues output = postscale * op(prescale * tensor) over ranks; output None or the "
        "tensor itself means in place. stream: a GPU tensor's stream (0: the default stream).");
  m.def("grouped_allreduce_async", &grouped_allreduce_async, py::arg("tensors"), py::arg("outputs"),
        py::arg("names"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
        py::arg("compression"), py::arg("stream") = 0, py::arg("process_set") = 0,
        "Enqueues a list of allreduces as one unit (fused together).");
  m.def("allgather_async", &allgather_async, py::arg("tensor"), py::arg("allocator"),
        py::arg("name"), py::arg("stream") = 0, py::arg("process_set") = 0,
        "Enqueues an allgather along the first dimension; allocator(dtype_name, shape) makes "
        "the output (on the input's device) once its shape is known.");
  m.def("broadcast_async", &broadcast_async, py::arg("tensor"), py::arg("root"), py::arg("name"),
        py::arg("stream") = 0, py::arg("process_set") = 0,
        "Enqueues an in-place broadcast of root's tensor.");
  m.def("alltoall_async", &alltoall_async, py::arg("tensor"), py::arg("splits"),
        py::arg("allocator"), py::arg("name"), py::arg("stream") = 0, py::arg("process_set") = 0,
        "Enqueues an alltoall; splits[p] first-dimension rows go to rank p (empty: even).");
  m.def("reducescatter_async", &reducescatter_async, py::arg("tensor"), py::arg("allocator"),
        py::arg("name"), py::arg("op"), py::arg("stream") = 0, py::arg("prescale") = 1.0,
        py::arg("postscale") = 1.0, py::arg("process_set") = 0,
        "Enqueues a reducescatter along the first dimension: this rank's block of "
        "postscale * op(prescale * tensor).");
  m.def(
      "barrier_async",
      [](int process_set) {
        auto flight = new_flight("barrier");
        return make_handle(hora::barrier_async(process_set), flight);
      },
      py::arg("process_set") = 0);
  m.def(
      "join_async",
      [](int process_set) {
        auto flight = new_flight("join");
        return make_handle(hora::join_async(process_set), flight);
      },
      py::arg("process_set") = 0);
}

}  // namespace python
}  // namespace hora
