// The process's runtime (Context), for hora's own layers: tests, benchmarks and tools that
// need the communicator or the store hora::init created. Not part of the user API (users
// include hora/hora.h only). Defined in core/hora.cc, which owns the Context.
//
// The engine's thread uses the job's communicator from init on (it answers a round every
// heartbeat). Code that drives context()->communicator() itself parks the engine first with
// pause_engine() and lets it go with resume_engine() (or hora::shutdown()), e.g.
//   HORA_RETURN_IF_ERROR(hora::detail::pause_engine(std::chrono::seconds(60)));
//   ... ring_allreduce(hora::detail::context()->communicator(), ...) ...
//   hora::detail::resume_engine();
#pragma once

#include <chrono>

#include "hora/status.h"

namespace hora {
class Context;
namespace detail {
// The runtime of the initialised process; nullptr when not initialised. The pointer is valid
// until hora::shutdown(). Thread-safe to call; REQUIRES: not concurrently with init/shutdown
// while the pointer is used.
Context* context();

// Parks the engine of every rank so that the calling thread may use context()->communicator()
// (and nothing else does). Collective: every rank calls it. Blocks until the engines parked
// after the same negotiation round (usually within a few milliseconds of the last rank's
// call); kTimeout when not every rank asked within `timeout` (this rank then no longer asks);
// the engine's error when it has stopped; kFailedPrecondition before init. Collectives
// enqueued while parked wait for resume_engine(). OK at once when already parked.
Status pause_engine(std::chrono::milliseconds timeout);
// Lets this rank's engine run rounds again (they complete once every rank resumed: resume on
// every rank, within HORA_TIMEOUT_S of each other). No-op when not parked or not initialised.
// hora::shutdown() resumes a parked engine by itself.
void resume_engine();
}  // namespace detail
}  // namespace hora
