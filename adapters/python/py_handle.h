// PyHandle: the Python object an `_async` collective returns (hora._core.Handle). It pairs
// the engine's hora::Handle with the collective's Flight (flight.h). Dropping it early is
// safe: the Flight stays registered until the engine completed the collective.
// Threads: any Python thread (the GIL serialises them); wait() releases the GIL.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>

#include "adapters/python/flight.h"
#include "hora/hora.h"

namespace hora {
namespace python {

class PyHandle {
 public:
  PyHandle(Handle handle, std::shared_ptr<Flight> flight);

  const std::string& name() const { return handle_.name(); }
  const std::string& kind() const { return flight_->kind; }
  // True once complete; never blocks.
  bool poll() const { return handle_.poll(); }
  // Waits (interruptibly, HORA_TIMEOUT_S) and returns the result: the output tensor
  // (allreduce, broadcast, allgather, reducescatter), the list of outputs (grouped
  // allreduce), (output, received_splits) for alltoall, the last rank to join for join, None
  // for barrier. Raises the hora.errors exception of a failed collective, again on every call.
  pybind11::object wait();
  // For a collective of GPU tensors (device() >= 0): waits only until the engine enqueued the
  // result's last kernel, makes `stream` (a cudaStream_t as an integer; 0: the default
  // stream) wait for it on the GPU (Handle::wait_on_stream), and returns wait()'s result,
  // whose tensors `stream`'s later work may use. For host tensors: wait(). Interruptible and
  // bounded as wait(); raises as wait().
  pybind11::object wait_on_stream(uintptr_t stream);
  // The CUDA ordinal of the collective's tensors; -1 for host tensors.
  int device() const { return flight_->device; }

 private:
  pybind11::object result();  // after completion or a published device result

  Handle handle_;
  std::shared_ptr<Flight> flight_;
};

// Tracks `flight` and wraps `handle` (REQUIRES: GIL). Raises the InvalidArgumentError (a
// ValueError) of a handle already failed so at its return: a collective refused at enqueue.
PyHandle make_handle(Handle handle, std::shared_ptr<Flight> flight);

void bind_handle(pybind11::module_& m);

}  // namespace python
}  // namespace hora
