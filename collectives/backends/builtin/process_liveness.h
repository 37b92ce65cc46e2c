// process_liveness: whether a local peer's process is gone, for the shared-memory transports
// (a peer on this host that dies leaves its pid behind in the segment header; this is how a
// waiter learns it will never arrive). Stateless; any thread.
#pragma once

#include <cstdint>

namespace hora {
namespace collectives {
namespace builtin {

// True when process `pid` no longer runs: it does not exist (kill(pid, 0) gives ESRCH) or it
// is a zombie its parent has not reaped yet. False for pid <= 0 (not recorded yet).
bool process_is_gone(int32_t pid);

// Whether a wait that timed out on local process `pid` may blame it (record it failed,
// collectives/failed_ranks.h): true when it is gone, stopped (SIGSTOP, a debugger) or not
// known (pid <= 0); false when it runs or sleeps, i.e. is alive and most likely waiting on
// another rank itself.
bool process_may_be_blamed(int32_t pid);

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
