// Flight: the Python objects one collective in flight needs, and the registry that keeps them
// alive until the engine completed it.
//
// A collective's buffers belong to Python objects (DLPack capsules, memoryviews, the output
// tensors). They must outlive the collective even when the caller drops its handle or its
// tensor early, or the engine would write freed memory. So every enqueued collective's Flight
// is registered here; the engine thread marks it done through an atomic flag (it never
// touches Python objects, so it never needs the GIL), and Python threads release the Flights
// of finished collectives under the GIL (drain(), called on every entry into the binding and
// by hora.shutdown()).
//
// Threads: the registry is guarded by the GIL (every method REQUIRES it); `done` is atomic.
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "hora/hora.h"

namespace hora {
namespace python {

struct Flight {
  std::string kind;                    // "allreduce", "allgather", ...
  std::vector<pybind11::object> keep;  // owners of every buffer the engine reads or writes
  pybind11::object result;             // what synchronize returns, when known at enqueue
  // Outputs allocated once negotiation told their shape (allgather, alltoall, reducescatter):
  // the caller's allocator, and what it returned (set on the engine thread under the GIL).
  pybind11::object allocator;
  pybind11::object allocated;
  // The CUDA ordinal of a collective of GPU tensors (-1: host tensors): its handle's
  // wait_on_stream makes that device's current stream wait instead of the host.
  int device = -1;
  // Set by the engine thread when the collective completed; shared with the callback so that
  // the callback holds no Python object.
  std::shared_ptr<std::atomic<bool>> done = std::make_shared<std::atomic<bool>>(false);
};

// Registers `flight` until `handle` completes and hooks the completion flag. REQUIRES: GIL.
void track(const Handle& handle, const std::shared_ptr<Flight>& flight);
// Releases the Flights of completed collectives. REQUIRES: GIL.
void drain();
// Collectives still tracked (completed ones count until the next drain). REQUIRES: GIL.
size_t tracked_count();

// An OutputAllocator calling the Python `allocator(dtype_name, shape)` on the engine thread
// (taking the GIL) and recording its tensor in the flight, which must be tracked before the
// collective can run. An exception in the allocator, or a result that is not a writable
// contiguous tensor, becomes the collective's error on this rank.
OutputAllocator python_allocator(const std::shared_ptr<Flight>& flight, const std::string& label);

}  // namespace python
}  // namespace hora
