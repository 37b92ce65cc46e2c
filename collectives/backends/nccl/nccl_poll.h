// poll_until: the one waiting loop of the NCCL backend. NCCL runs asynchronously (a
// non-blocking communicator: ncclConfig blocking = 0), so every wait -- init, enqueueing a
// group, a collective or transfer finishing on the stream -- is a poll of a completion
// predicate that also watches, on every round:
//   1. the communicator's abort flag (Communicator::abort, any thread): kRemote "aborted";
//   2. ncclCommGetAsyncError: any result but ncclSuccess / ncclInProgress is the error
//      (ncclRemoteError -> kRemote, nccl_status.h);
//   3. the Deadline: kTimeout naming what was awaited;
//   4. every kDeadPeerCheckPeriod, an optional check for a peer process that is gone (on this
//      host): kRemote naming that rank.
// It never aborts the NCCL communicator itself: the caller does (NcclCommunicator::fail),
// since after any failure the communicator is unusable. Backoff: yields for the first ~50 us,
// then sleeps 10 us doubling to 1 ms, so a long wait costs little CPU.
//
// Runs on the communicator's thread. The predicate and the peer check are called on it too.
#pragma once

#include <nccl.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>

#include "collectives/backends/nccl/nccl_api.h"
#include "core/base/deadline.h"
#include "hora/status.h"

namespace hora {
namespace collectives {
namespace nccl_backend {

inline constexpr std::chrono::milliseconds kDeadPeerCheckPeriod{100};

struct PollTarget {
  NcclApi* api = nullptr;
  ncclComm_t comm = nullptr;                   // null: no async-error check (before init)
  const std::atomic<bool>* aborted = nullptr;  // null: never aborted
  // "" while every watched peer lives; else a text naming the dead one ("rank 2 (pid 71 on
  // host a) is gone"). May be empty (no check).
  std::function<std::string()> dead_peer;
};

// Polls until `done` returns true (OK), `done` fails (its Status), or one of the watches above
// fires. `what` names the wait in every message ("rank 1 of 4: allreduce of 1024 float32").
Status poll_until(const PollTarget& target, const std::function<StatusOr<bool>()>& done,
                  Deadline deadline, const std::string& what);

}  // namespace nccl_backend
}  // namespace collectives
}  // namespace hora
