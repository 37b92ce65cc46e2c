// Waiting on the engine from Python: the GIL is released while waiting, and the wait runs in
// slices of 100 ms so that Ctrl-C (a pending signal) interrupts it with KeyboardInterrupt
// within about a second. The collective stays pending in the engine; its buffers stay owned
// by its Flight (flight.h), so an interrupted wait never frees memory the engine may write.
#pragma once

#include <chrono>
#include <functional>

#include "hora/hora.h"
#include "hora/status.h"

namespace hora {
namespace python {

// Waits until `handle` completed and returns its Status; kTimeout naming the tensor after
// `timeout_s` seconds (<= 0: no deadline of its own, for barrier and join, which complete as
// long as the engine runs). Raises the Python exception of a pending signal (KeyboardInterrupt)
// REQUIRES: the GIL (released while waiting).
Status wait_interruptibly(const Handle& handle, double timeout_s);

// The same loop over any sliced wait: `slice(timeout)` returns kTimeout while work is still
// pending (then `pending()` is true) and anything else once finished.
Status wait_sliced(const std::function<Status(std::chrono::milliseconds)>& slice,
                   const std::function<bool()>& pending, double timeout_s, const std::string& what);

// HORA_TIMEOUT_S of the running job (300 before init).
double job_timeout_s();

}  // namespace python
}  // namespace hora
