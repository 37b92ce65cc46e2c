// hora._core: the one native module behind every Python adapter (hora, hora.torch,
// hora.tensorflow, hora.keras). Framework-neutral: tensors come in through DLPack.
#include <pybind11/pybind11.h>

#include "adapters/python/binding.h"

PYBIND11_MODULE(_core, m) {
  m.doc() = "hora's native core: init, collectives, handles, the gradient reducer";
  hora::python::bind_api(m);
  hora::python::bind_handle(m);
  hora::python::bind_collectives(m);
  hora::python::bind_reducer(m);
  hora::python::bind_c_api(m);
  hora::python::bind_elastic(m);
}
