#include "adapters/python/waiting.h"

#include <pybind11/pybind11.h>

#include <algorithm>

namespace py = pybind11;

namespace hora {
namespace python {
namespace {

constexpr std::chrono::milliseconds kSlice(100);

}  // namespace

double job_timeout_s() { return hora::timeout_s(); }

Status wait_sliced(const std::function<Status(std::chrono::milliseconds)>& slice,
                   const std::function<bool()>& pending, double timeout_s,
                   const std::string& what) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  while (true) {
    std::chrono::milliseconds step = kSlice;
    if (timeout_s > 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          start + std::chrono::duration<double>(timeout_s) - Clock::now());
      step = std::max(std::chrono::milliseconds(0), std::min(step, left));
    }
    Status s;
    {
      py::gil_scoped_release release;
      s = slice(step);
    }
    if (!pending()) {
      // Complete. A slice that gave up just before completion returned its own timeout, not
      // the result: ask once more, which returns the result at once.
      if (s.code() == StatusCode::kTimeout) s = slice(std::chrono::milliseconds(0));
      return s;
    }
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    if (timeout_s > 0 && Clock::now() - start >= std::chrono::duration<double>(timeout_s))
      return Status::timeout(what + " did not complete within HORA_TIMEOUT_S (" +
                             std::to_string(timeout_s) + " s); it stays pending");
  }
}

Status wait_interruptibly(const Handle& handle, double timeout_s) {
  Handle h = handle;  // the lambdas run without the GIL: no Python object in them
  return wait_sliced([&h](std::chrono::milliseconds t) { return h.wait(t); },
                     [&h] { return !h.poll(); }, timeout_s, "tensor '" + h.name() + "'");
}

}  // namespace python
}  // namespace hora
