// The process's runtime (Context), for hora's own layers: tests, benchmarks and tools that
// need the communicator or the store hora::init created. Not part of the user API (users
// include core/hora.h only). Defined in core/hora.cc, which owns the Context.
#pragma once

namespace hora {
class Context;
namespace detail {
// The runtime of the initialised process; nullptr when not initialised. The pointer is valid
// until hora::shutdown(). Thread-safe to call; REQUIRES: not concurrently with init/shutdown
// while the pointer is used.
Context* context();
}  // namespace detail
}  // namespace hora
