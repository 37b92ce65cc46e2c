// hora._core.GradientReducer: core/gradient_reducer.h for Python adapters (hora.torch's and
// hora.keras's DistributedOptimizer). Backward hooks call gradient_ready from any thread (each
// holds the GIL while in here, which also guards the buffer owners); synchronize releases the
// GIL and waits in slices, so Ctrl-C interrupts it.
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
#include "core/gradient_reducer.h"

namespace py = pybind11;

namespace hora {
namespace python {
namespace {

class PyGradientReducer {
 public:
  PyGradientReducer(std::vector<std::string> names, GradientReducerOptions options)
      : reducer_(check(GradientReducer::create(std::move(names), std::move(options)))) {}

  ~PyGradientReducer() {
    // Waiting for collectives still in flight must not hold the GIL.
    py::gil_scoped_release release;
    reducer_.reset();
  }

  void gradient_ready(size_t index, py::handle tensor, uintptr_t stream) {
    TensorView view = import(index, tensor, stream);
    check(reducer_->gradient_ready(index, view));
  }

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
  TensorView import(size_t index, py::handle tensor, uintptr_t stream) {
    if (index >= reducer_->parameter_count())
      throw_status(Status::invalid_argument(
          "GradientReducer: parameter index " + std::to_string(index) + " is out of range (" +
          std::to_string(reducer_->parameter_count()) + " parameters)"));
    ImportedTensor t =
        check(import_tensor(tensor, reducer_->options().name_prefix + reducer_->name(index),
                            "gradient", true, reinterpret_cast<void*>(stream)));
    owners_.push_back(std::move(t.owner));
    return t.view;
  }

  std::unique_ptr<GradientReducer> reducer_;
  std::vector<py::object> owners_;  // buffers handed in this step; guarded by the GIL
};

}  // namespace

void bind_reducer(py::module_& m) {
  py::class_<PyGradientReducer>(
      m, "GradientReducer",
      "Per-parameter gradient bookkeeping shared by the framework adapters: pass counting, "
      "allreduce at the k-th backward pass, groups, unused parameters, the first error.")
      .def(py::init([](std::vector<std::string> names, ReduceOp op, Compression compression,
                       int backward_passes_per_step, bool average_aggregated_gradients,
                       double gradient_predivide_factor, std::string name_prefix,
                       std::vector<std::vector<size_t>> groups, bool overlap_backward) {
             GradientReducerOptions o;
             o.op = op;
             o.compression = compression;
             o.backward_passes_per_step = backward_passes_per_step;
             o.average_aggregated_gradients = average_aggregated_gradients;
             o.gradient_predivide_factor = gradient_predivide_factor;
             o.name_prefix = std::move(name_prefix);
             o.groups = std::move(groups);
             o.overlap_backward = overlap_backward;
             return std::make_unique<PyGradientReducer>(std::move(names), std::move(o));
           }),
           py::arg("names"), py::arg("op") = ReduceOp::kAverage,
           py::arg("compression") = Compression::kNone, py::arg("backward_passes_per_step") = 1,
           py::arg("average_aggregated_gradients") = false,
           py::arg("gradient_predivide_factor") = 1.0, py::arg("name_prefix") = "grad/",
           py::arg("groups") = std::vector<std::vector<size_t>>{},
           py::arg("overlap_backward") = true)
      .def("gradient_ready", &PyGradientReducer::gradient_ready, py::arg("index"),
           py::arg("tensor"), py::arg("stream") = 0,
           "Parameter `index`'s gradient is complete for this backward pass; on the k-th pass "
           "its allreduce starts (in place in `tensor`). stream: a GPU gradient's stream.")
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
