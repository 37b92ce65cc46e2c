// The builtin backend: hora's own transports. Each peer is reached over shared memory when it
// runs on the same host (same hostname and boot id, published through the Store) and over
// TCP otherwise; HORA_SHM=0 (shm_enabled = false) uses TCP for every peer.
//
// Progress: there is no background thread. isend/irecv only post; bytes move while some
// request is waited on, and a wait on one request progresses every pending request of every
// peer, so overlapped isend+irecv pairs (ring algorithms) never deadlock, and two ranks that
// both send before receiving do not either (a message nobody asked for yet is buffered
// when nothing else can move). Waiting spins for `spin` (yielding the core now and then when
// the host has more ranks than CPUs) and then sleeps (futex on the shm doorbell, poll(2) on
// the sockets) so an idle rank burns no CPU.
//
// Failure: a peer whose process is gone (shm: its pid; TCP: its connection closed) fails
// every wait on it with kRemote naming it, and the error also names every other member the
// group lost by then; a wait on a live peer that made no progress for 5 s fails the same way
// once any member is gone (in a collective that peer is stuck behind it too). A wait past
// its Deadline gives kTimeout naming the peer, the tag and the bytes. abort() makes every
// wait return promptly.
//
// The Store must be fresh for this communicator (give each one its own PrefixStore):
// keys live under options.key_prefix.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "collectives/rendezvous/store.h"

namespace hora {
namespace collectives {

struct BuiltinOptions {
  bool shm_enabled = true;  // HORA_SHM
  double timeout_s = 30.0;  // deadline of the set-up (HORA_START_TIMEOUT_S)
  std::string secret;       // job secret (HORA_SECRET) for the TCP handshake
  std::string key_prefix = "builtin/";
  // Identifies the host: peers with the same id use shared memory. Empty: host_identity()
  // (hostname, boot id and network namespace; core/base/host_identity.h).
  std::string host_id;
  // TCP listen / advertised address. Empty: 127.0.0.1 when every rank is on this host, else
  // 0.0.0.0 and this host's first non-loopback IPv4 address.
  std::string tcp_bind_host;
  std::string tcp_advertise_host;
  int tcp_buffer_bytes = 4 << 20;
  size_t shm_ring_bytes = 0;   // per ordered pair; 0: 2 MiB (less with many local ranks)
  size_t shm_chunk_bytes = 0;  // publish granularity; 0: 64 KiB
  uint64_t max_message_bytes = uint64_t{1} << 40;
  std::chrono::microseconds spin{50};                // busy-wait before sleeping
  std::chrono::milliseconds liveness_interval{100};  // how often a stuck wait checks peers
  // Single-copy collectives (shm_exchange.h, shm_allreduce.h): when every rank is on this host
  // and shm is enabled, allreduce, broadcast, allgatherv and reducescatter run natively through
  // one shared exchange.
  bool shm_collectives = true;
  size_t shm_exchange_slot_bytes = 0;  // one step's chunk per rank (two slots); 0: 1 MiB
  size_t shm_small_bytes = 16 * 1024;  // allreduce up to this size: one sync point
  // Per rank, what shared_buffer() can hand out (pre-faulted at creation); 0: none. Sized to
  // the fusion buffer, it lets the engine's buffer skip the allreduce copy-in.
  size_t shm_shared_bytes = 0;
  // The job's global ranks of this communicator's ranks (a process set's members), under
  // which failures go to the process's FailedRanks (collectives/failed_ranks.h); empty: the
  // job's own communicator (rank r is global rank r).
  std::vector<int> members;
};

// Connects rank `rank` of `size` to every other rank through `store`. Blocks until every
// link is up or options.timeout_s passes (kTimeout naming what is missing).
StatusOr<std::unique_ptr<Communicator>> make_builtin_communicator(int rank, int size, Store& store,
                                                                  const BuiltinOptions& options);

}  // namespace collectives
}  // namespace hora
