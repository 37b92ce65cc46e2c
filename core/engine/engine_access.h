// The process's engine, for core/api.cc. Defined in core/hora.cc, which owns it.
#pragma once

#include <memory>

namespace hora {
namespace engine {
class Engine;
}  // namespace engine
namespace detail {
// The engine of the initialised runtime, shared so that a caller keeps it alive while it
// enqueues; nullptr when not initialised.
std::shared_ptr<engine::Engine> engine();
}  // namespace detail
}  // namespace hora
