// The multi-process test environment: mp_main.cc initialises hora (hora::init, so the whole
// start path is under test) before RUN_ALL_TESTS and shuts it down after; tests reach the
// job's communicator through mp_communicator(). Every rank runs every test; a test that
// fails on any rank makes that rank exit non-zero, and horarun then fails the job.
#pragma once

#include "collectives/communicator.h"
#include "core/base/deadline.h"

namespace hora {
namespace mp {

// The communicator hora::init created. The first call parks the engine on every rank (a
// collective call: every rank's first call must come in the same test) until shutdown, so a
// binary uses either this communicator or hora's collectives API, not both. REQUIRES: called
// from a test body (after init).
collectives::Communicator& mp_communicator();

// A deadline for test waits: generous, so a slow oversubscribed machine never flakes, and
// still bounded.
inline Deadline mp_deadline() { return Deadline::after_seconds(60); }

}  // namespace mp
}  // namespace hora
