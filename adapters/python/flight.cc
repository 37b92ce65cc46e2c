#include "adapters/python/flight.h"

#include <pybind11/stl.h>

#include <algorithm>

#include "adapters/python/tensor_import.h"

namespace py = pybind11;

namespace hora {
namespace python {
namespace {

// Never destroyed: its Python objects must not be released after the interpreter finalised.
std::vector<std::shared_ptr<Flight>>& registry() {
  static auto* flights = new std::vector<std::shared_ptr<Flight>>();
  return *flights;
}

}  // namespace

void track(const Handle& handle, const std::shared_ptr<Flight>& flight) {
  registry().push_back(flight);
  std::shared_ptr<std::atomic<bool>> done = flight->done;
  handle.on_complete([done](const Status&) { done->store(true, std::memory_order_release); });
}

void drain() {
  auto& flights = registry();
  flights.erase(std::remove_if(flights.begin(), flights.end(),
                               [](const std::shared_ptr<Flight>& f) {
                                 return f->done->load(std::memory_order_acquire);
                               }),
                flights.end());
}

size_t tracked_count() { return registry().size(); }

OutputAllocator python_allocator(const std::shared_ptr<Flight>& flight, const std::string& label) {
  // A weak reference: the registry holds the flight until completion, and the allocator runs
  // before completion, so the flight is alive whenever this runs; and the engine thread, which
  // owns this function object, then never holds the last reference to Python objects.
  std::weak_ptr<Flight> weak = flight;
  return [weak, label](DataType dtype, const std::vector<int64_t>& shape) -> StatusOr<TensorView> {
    std::shared_ptr<Flight> f = weak.lock();
    if (!f)
      return Status::internal("tensor '" + label +
                              "': its output allocator ran after the "
                              "collective was released");
    py::gil_scoped_acquire gil;
    try {
      py::object out = f->allocator(data_type_name(dtype), py::tuple(py::cast(shape)));
      StatusOr<ImportedTensor> t = import_tensor(out, label, "allocated output", true);
      if (!t.ok()) return t.status();
      f->allocated = out;
      f->keep.push_back(std::move(t.value().owner));
      return t.value().view;
    } catch (py::error_already_set& e) {
      return Status::invalid_argument("tensor '" + label + "': the output allocator raised " +
                                      e.what());
    }
  };
}

}  // namespace python
}  // namespace hora
