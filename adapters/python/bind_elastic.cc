// hora._core's elastic calls (hora/elastic.h), for hora.elastic: elastic_enabled,
// elastic_reset, elastic_hosts_updated, elastic_generation. reset and hosts_updated wait on
// other workers and on horarun, so they release the GIL; errors raise hora.errors' classes
// (errors.h).
#include <pybind11/pybind11.h>

#include <string>

#include "adapters/python/binding.h"
#include "adapters/python/errors.h"
#include "adapters/python/flight.h"
#include "hora/elastic.h"

namespace py = pybind11;

namespace hora {
namespace python {

void bind_elastic(py::module_& m) {
  m.def("elastic_enabled", &elastic::enabled,
        "Whether this process is a worker of an elastic job (HORA_ELASTIC=1).");
  m.def(
      "elastic_reset",
      [](bool hosts_updated, const std::string& reason) {
        drain();
        Status s;
        {
          // As in shutdown: the engine thread may wait for the GIL while it stops.
          py::gil_scoped_release release;
          s = elastic::reset(hosts_updated, reason);
        }
        drain();  // the old membership's collectives have all completed (failed)
        check(s);
      },
      py::arg("hosts_updated"), py::arg("reason"),
      "Leaves the current generation of the elastic job and joins the next (hora/elastic.h).");
  m.def(
      "elastic_hosts_updated",
      [] {
        StatusOr<bool> updated = false;
        {
          py::gil_scoped_release release;
          updated = elastic::hosts_updated();
        }
        return check(std::move(updated));
      },
      "Whether horarun added hosts in this generation: the same answer on every rank "
      "(a collective).");
  m.def("elastic_generation", &elastic::generation,
        "The current generation of the elastic job; -1 when not initialised or not elastic.");
}

}  // namespace python
}  // namespace hora
