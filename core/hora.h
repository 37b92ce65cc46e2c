// hora: the public C++ API. The only header users include.
//
//   hora::Status s = hora::init();     // reads HORA_* (or mpirun/Slurm/torchrun) variables
//   if (!s.is_ok()) { std::cerr << s.to_string() << "\n"; return 1; }
//   ... hora::rank(), hora::size() ...
//   hora::shutdown();
//
// The collective operations (allreduce_async, wait, ...) come with the engine (a later
// issue); this header holds process setup. There is one runtime per process, held in a
// single static in hora.cc.
//
// Threads: init and shutdown from one thread, not concurrently with each other. The
// accessors are safe from any thread once init returned OK.
#pragma once

#include "core/base/status.h"

namespace hora {

class Context;

// Initialises hora: parses the configuration (Config::from_env: every HORA_* variable,
// validated), the rank layout (core/layout.h lists the launchers understood), applies
// HORA_LOG_LEVEL and HORA_CPU_ISA (failing when the CPU lacks the ISA asked for), connects
// the rendezvous store, waits for every rank (HORA_START_TIMEOUT_S; the error names the ranks
// that never arrived) and creates the communicator of HORA_BACKEND.
// Calling init again while initialised is a no-op returning OK. Blocks at most about
// HORA_START_TIMEOUT_S.
Status init();

// Releases everything init created. Idempotent; OK when not initialised. Blocks at most
// HORA_START_TIMEOUT_S when this rank hosts the store (it waits for the others to finish).
Status shutdown();

bool is_initialized();

// The layout of the job. REQUIRES: is_initialized(); each returns -1 otherwise.
int rank();
int size();
int local_rank();   // among the ranks on this host
int local_size();
int cross_rank();   // index of this host among the job's hosts
int cross_size();

namespace detail {
// The runtime, for hora's own layers (the engine) and tests; nullptr when not initialised.
// Not part of the user API.
Context* context();
}  // namespace detail

}  // namespace hora
