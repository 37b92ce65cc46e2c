// hora._core.GradientReducer: hora/gradient_reducer.h for Python adapters (hora.torch's and
// hora.keras's DistributedOptimizer). Backward hooks call gradient_ready (or ready_param, the
// whole of hora.torch's hook in one call) from any thread; each holds the GIL while in here,
// which also guards the buffer owners, and keeps it: the reducer's critical section is
// shorter than a release and reacquire. synchronize releases the GIL and waits in slices, so
// Ctrl-C interrupts it.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "adapters/python/binding.h"
#include "adapters/python/errors.h"
#include "adapters/python/tensor_import.h"
#include "adapters/python/waiting.h"
#include "hora/gradient_reducer.h"

namespace py = pybind11;

namespace hora {
namespace python {
namespace {

class PyGradientReducer {
 public:
  PyGradientReducer(std::vector<std::string> names, GradientReducerOptions options,
                    py::object param_exporter, py::object param_stream)
      : reducer_(check(GradientReducer::create(std::move(names), std::move(options)))),
        exporter_(param_exporter.is_none() ? py::object() : std::move(param_exporter)),
        stream_of_(param_stream.is_none() ? py::object() : std::move(param_stream)) {}

  ~PyGradientReducer() {
    // Waiting for collectives still in flight must not hold the GIL.
    py::gil_scoped_release release;
    reducer_.reset();
  }

  void gradient_ready(size_t index, py::handle tensor, uintptr_t stream) {
    TensorView view = import(index, tensor, stream);
    check(reducer_->gradient_ready(index, view));
  }

  // A framework's backward hook for parameter `index` in one call: marks the backward seen,
  // reads param.grad (None: nothing to report), and when the exporter makes a plain capsule of
  // it (read_plain_capsule; a device gradient also needs a stream function, which gives its
  // stream) reports that with no Python code running; otherwise (no exporter, or a sparse,
  // strided or other gradient the exporter refuses or hora does not take as it is) calls
  // fallback(param), the framework's general hook.
  void ready_param(size_t index, py::handle fallback, py::handle param) {
    backward_seen_ = true;
    check_index(index);
    if (exporter_) {
      static PyObject* const grad_name = PyUnicode_InternFromString("grad");
      PyObject* g = PyObject_GetAttr(param.ptr(), grad_name);
      if (g == nullptr) throw py::error_already_set();
      py::object grad = py::reinterpret_steal<py::object>(g);
      if (grad.is_none()) return;
      PyObject* c = PyObject_Vectorcall(exporter_.ptr(), &g, 1, nullptr);
      if (c == nullptr) {
        PyErr_Clear();  // e.g. a sparse gradient: the fallback handles it
      } else {
        py::object capsule = py::reinterpret_steal<py::object>(c);
        TensorView view;
        if (read_plain_capsule(capsule, &view) && (!view.device().is_cuda() || stream_of_)) {
          if (view.device().is_cuda())
            view = view.with_stream(reinterpret_cast<void*>(stream_of_(grad).cast<uintptr_t>()));
          owners_.push_back(std::move(capsule));
          check(reducer_->gradient_ready(index, view));
          return;
        }
      }
    }
    fallback(param);
  }

  bool backward_seen() const { return backward_seen_; }
  void set_backward_seen(bool seen) { backward_seen_ = seen; }

  void flush(size_t index, py::handle tensor, uintptr_t stream) {
    TensorView view = import(index, tensor, stream);
    check(reducer_->flush(index, view));
  }

  void synchronize() {
    GradientReducer* r = reducer_.get();
    Status s =
        wait_sliced([r](std::chrono::milliseconds t) { return r->synchronize(t); },
                    [r] { return r->has_pending(); }, job_timeout_s(), "the gradients' allreduces");
    if (!reducer_->has_pending()) owners_.clear();
    check(s);
  }

  GradientReducer& reducer() { return *reducer_; }

 private:
  // `stream`: a GPU gradient's stream (tensor_import.h).
  void check_index(size_t index) const {
    if (index >= reducer_->parameter_count())
      throw_status(Status::invalid_argument(
          "GradientReducer: parameter index " + std::to_string(index) + " is out of range (" +
          std::to_string(reducer_->parameter_count()) + " parameters)"));
  }

  TensorView import(size_t index, py::handle tensor, uintptr_t stream) {
    check_index(index);
    ImportedTensor t = check(
        import_tensor(tensor, TensorLabel(reducer_->options().name_prefix, reducer_->name(index)),
                      "gradient", true, reinterpret_cast<void*>(stream)));
    owners_.push_back(std::move(t.owner));
    return t.view;
  }

  std::unique_ptr<GradientReducer> reducer_;
  // ready_param's exporter (param.grad -> DLPack capsule) and a device gradient's stream
  // (grad -> int), or null: functions of the framework and the adapter's module
  // (torch._C._to_dlpack_versioned, hora.torch._tensors.stream_of), so they close no
  // reference cycle through this object, which the garbage collector does not traverse.
  py::object exporter_;
  py::object stream_of_;
  bool backward_seen_ = false;      // guarded by the GIL
  std::vector<py::object> owners_;  // buffers handed in this step; guarded by the GIL
};

}  // namespace

void bind_reducer(py::module_& m) {
  py::class_<PyGradientReducer>(
      m, "GradientReducer",
      "Per-parameter gradient bookkeeping shared by the framework adapters: pass counting, "
      "allreduce at the k-th backward pass, groups, unused parameters, the first error. "
      "process_set: the id of the set whose ranks average the gradients (0: every rank).")
      .def(py::init([](std::vector<std::string> names, ReduceOp op, Compression compression,
                       int backward_passes_per_step, bool average_aggregated_gradients,
                       double gradient_predivide_factor, std::string name_prefix,
                       std::vector<std::vector<size_t>> groups, bool overlap_backward,
                       py::object param_exporter, py::object param_stream, int process_set) {
             GradientReducerOptions o;
             o.op = op;
             o.compression = compression;
             o.backward_passes_per_step = backward_passes_per_step;
             o.average_aggregated_gradients = average_aggregated_gradients;
             o.gradient_predivide_factor = gradient_predivide_factor;
             o.name_prefix = std::move(name_prefix);
             o.groups = std::move(groups);
             o.overlap_backward = overlap_backward;
             o.process_set = process_set;
             return std::make_unique<PyGradientReducer>(std::move(names), std::move(o),
                                                        std::move(param_exporter),
                                                        std::move(param_stream));
           }),
           py::arg("names"), py::arg("op") = ReduceOp::kAverage,
           py::arg("compression") = Compression::kNone, py::arg("backward_passes_per_step") = 1,
           py::arg("average_aggregated_gradients") = false,
           py::arg("gradient_predivide_factor") = 1.0, py::arg("name_prefix") = "grad/",
           py::arg("groups") = std::vector<std::vector<size_t>>{},
           py::arg("overlap_backward") = true, py::arg("param_exporter") = py::none(),
           py::arg("param_stream") = py::none(), py::arg("process_set") = 0)
      .def("gradient_ready", &PyGradientReducer::gradient_ready, py::arg("index"),
           py::arg("tensor"), py::arg("stream") = 0,
           "Parameter `index`'s gradient is complete for this backward pass; on the k-th pass "
           "its allreduce starts (in place in `tensor`). stream: a GPU gradient's stream.")
      .def("ready_param", &PyGradientReducer::ready_param, py::arg("index"), py::arg("fallback"),
           py::arg("param"),
           "A backward hook in one call (functools.partial(ready_param, index, fallback) is the "
           "hook): param.grad (skipped when None) reported as "
           "gradient_ready(index, ...) when param_exporter (given at construction) makes a "
           "dense, contiguous DLPack capsule of it (host, or CUDA with the stream "
           "param_stream(grad) gives); fallback(param) otherwise. Sets backward_seen.")
      .def_property("backward_seen", &PyGradientReducer::backward_seen,
                    &PyGradientReducer::set_backward_seen,
                    "True once ready_param ran since the adapter last set it False.")
      .def("flush", &PyGradientReducer::flush, py::arg("index"), py::arg("tensor"),
           py::arg("stream") = 0, "Starts parameter `index`'s allreduce now (an unused parameter).")
      .def(
          "unreported", [](PyGradientReducer& r) { return r.reducer().unreported(); },
          "Parameters whose allreduce has not started in this step.")
      .def("synchronize", &PyGradientReducer::synchronize,
           "Starts what is left and waits for every allreduce of the step; raises the step's "
           "first error.")
      .def("has_pending", [](PyGradientReducer& r) { return r.reducer().has_pending(); })
      .def("index_of", [](PyGradientReducer& r,
                          const std::string& name) { return check(r.reducer().index_of(name)); })
      .def_property_readonly("parameter_count",
                             [](PyGradientReducer& r) { return r.reducer().parameter_count(); });
}

}  // namespace python
}  // namespace hora
