// The process's engine, for core/api.cc (and hora's tests). Defined in core/hora.cc, which owns
// it: both are the api layer, above the engine they hold.
#pragma once

#include <memory>

namespace hora {
class ProcessSetTable;
namespace engine {
class Engine;
}  // namespace engine
namespace detail {
// The process sets of the initialised runtime (core/process_set_table.h); nullptr when not
// initialised. Valid until hora::shutdown(); not concurrently with init/shutdown.
ProcessSetTable* process_set_table();

// The engine of the initialised runtime, shared so that a caller keeps it alive while it
// enqueues; nullptr when not initialised.
std::shared_ptr<engine::Engine> engine();

// The running engine for one call that does not block (an enqueue), without the runtime's
// mutex or a copy of its shared_ptr: the hot path of allreduce_async. The lease is the
// thread's (core/base/thread_leases.h: no atomic read-modify-write); shutdown() clears the
// engine for new leases, then waits for those held before it stops and releases the engine.
// get() is nullptr when not initialised (or shutting down).
class EngineLease {
 public:
  EngineLease();
  ~EngineLease();
  EngineLease(const EngineLease&) = delete;
  EngineLease& operator=(const EngineLease&) = delete;
  engine::Engine* get() const { return engine_; }

 private:
  engine::Engine* engine_;
};
}  // namespace detail
}  // namespace hora
