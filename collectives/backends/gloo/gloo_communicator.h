// The Gloo backend: a Communicator over Debian's libgloo (tcp transport).
//
// Creation connects a full mesh of TCP pairs (gloo::rendezvous::Context::connectFullMesh),
// exchanging addresses through any hora Store (adapted by GlooStoreAdapter). Point to point
// uses gloo unbound buffers: tag t maps to slot (0xA5 << 56) | t, apart from the slot prefixes
// gloo's own collectives use (0x01-0x0f), so algorithms' messages never meet gloo's.
// Native collectives: allreduce (gloo ring or bcube), allgatherv, broadcast, alltoallv,
// barrier, and reducescatter (gloo's allreduce: its halving-doubling reduce-scatter returns
// with sends in flight). Every gloo exception is turned into a Status inside this folder.
//
// Deadlines: each wait passes the time left to gloo. Note that a gloo wait that times out
// poisons the whole gloo context (gloo signals the timeout to every pair), so after a
// kTimeout this communicator is unusable: every later call fails. That is the rule for any
// failed wait on a peer here, as it is in the engine above.
//
// abort(): any thread. Sets a flag and interrupts every pending point-to-point wait at once
// (unbound buffer abortWaitSend/abortWaitRecv); the waits return kRemote "aborted". A native
// collective already inside gloo cannot be interrupted: it ends at its own deadline, and
// every later call fails at once with "aborted".
//
// Threads: one thread at a time uses the communicator (the Communicator contract).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "collectives/rendezvous/store.h"
#include "core/base/deadline.h"
#include "hora/status.h"

namespace hora {
namespace collectives {

struct GlooOptions {
  // Network interface for the pairs (HORA_GLOO_IFACE), e.g. "eth0". Wins when set.
  std::string iface;
  // Else a local address or host name to bind, e.g. "127.0.0.1".
  std::string hostname;
  // Else the address is chosen from the rendezvous address: loopback when it is loopback or
  // empty (a local job), otherwise the local address that routes to it.
  std::string rendezvous_addr;
  // Default deadline of a wait when the caller's is longer (gloo context timeout) and of
  // connecting the mesh.
  double timeout_s = 300.0;
  // Native allreduce: false = gloo's ring, true = bcube.
  bool allreduce_bcube = false;
  // A process set's: the job's global ranks of ranks 0..size-1, for FailedRanks
  // (collectives/failed_ranks.h); empty: the job's own communicator.
  std::vector<int> members;
};

// Connects rank `rank` of `size` through `store`, which must outlive the communicator (its
// failure board posts there when a peer fails: failure_board.h). Blocks until
// every rank has connected or `deadline`; kTimeout then, naming the store keys still missing.
StatusOr<std::unique_ptr<Communicator>> create_gloo_communicator(int rank, int size, Store& store,
                                                                 const GlooOptions& options,
                                                                 Deadline deadline);

// The address gloo binds for `options` (see GlooOptions): the iface name, or an IP address.
// Exposed for tests. kIo when no route to the rendezvous address exists.
struct GlooBindAddress {
  std::string iface;     // non-empty: bind this interface
  std::string hostname;  // else bind this address
};
StatusOr<GlooBindAddress> choose_gloo_bind_address(const GlooOptions& options);

}  // namespace collectives
}  // namespace hora
