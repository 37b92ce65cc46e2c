// The parts of hora._core, one bind_* function per file (module.cc calls them in order).
#pragma once

#include <pybind11/pybind11.h>

namespace hora {
namespace python {

void bind_api(pybind11::module_& m);          // bind_api.cc: init, layout, ops, stats
void bind_handle(pybind11::module_& m);       // py_handle.cc
void bind_collectives(pybind11::module_& m);  // bind_collectives.cc
void bind_reducer(pybind11::module_& m);      // bind_reducer.cc: GradientReducer
void bind_c_api(pybind11::module_& m);        // c_api.cc: the C ABI for native op libraries
void bind_elastic(pybind11::module_& m);      // bind_elastic.cc: hora/elastic.h

}  // namespace python
}  // namespace hora
