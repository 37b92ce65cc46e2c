// run_ranks: runs one function on N in-process ranks, one thread each, and reports the first
// failure (gloo's BaseTest::spawn, c10d's CollectiveTest).
//
// Each thread gets its own InProcCommunicator of a fresh InProcWorld. The function returns a
// Status rather than using ASSERT_* (an ASSERT inside a thread only leaves that thread), so
// every check is surfaced: the first failure in time comes back to the test's thread,
// prefixed with the rank. When a rank fails, the harness calls fail() on its communicator,
// so its peers stop waiting on it at once (as a launcher's teardown would) instead of timing
// out. A thrown exception is caught and reported as kInternal. All threads are joined
// before run_ranks returns; the world is destroyed after the last thread ends.
#pragma once

#include <functional>
#include <vector>

#include "collectives/communicator.h"
#include "hora/status.h"
#include "tests/support/inproc_communicator.h"

namespace hora {
namespace test_support {

using RankFn = std::function<Status(collectives::Communicator& comm)>;
using InProcRankFn = std::function<Status(InProcCommunicator& comm, InProcWorld& world)>;

// Runs fn on ranks 0..n-1 and returns the first failure ("rank r: ..."), or OK.
Status run_ranks(int n, const RankFn& fn, SendMode mode = SendMode::kEager);

// Like run_ranks, with access to the world (to kill ranks), and every rank's own Status.
std::vector<Status> run_ranks_each(int n, const InProcRankFn& fn, SendMode mode = SendMode::kEager);

}  // namespace test_support
}  // namespace hora
