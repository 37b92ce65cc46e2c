// Leases that threads take, on every call of a hot path, on a resource that one rare call
// retires: the runtime's engine, which every allreduce_async leases for the length of its
// enqueue and shutdown() stops and releases (core/hora.cc). One set per process.
//
// A lease is this thread's own counter, in a slot the thread registers once: taking one is a
// store, a fence and the caller's load of the resource's pointer; returning it, a store. A
// shared counter cost two atomic read-modify-writes a call, each draining the store buffer
// (a tenth of the engine's cost per tensor of a 200-tensor step). The fence is a compiler
// barrier where the kernel has membarrier(2) with MEMBARRIER_CMD_PRIVATE_EXPEDITED: drain()
// then makes every running thread of the process execute a full barrier (an asymmetric
// fence); elsewhere it is a full fence. Either way, a thread that took a lease before drain()
// began is waited for, and one that takes it after sees the pointer cleared:
//
//   enter(): my slot := held;   fence; read the pointer
//   retire:  pointer := null;   drain(): heavy fence; wait for each slot held then to be
//                                returned
//
// Nested leases on one thread are counted in its slot.
#pragma once

#include <chrono>

#include "hora/status.h"

namespace hora {
namespace thread_leases {

// Takes a lease for this thread. The caller then reads the resource's pointer (acquire): null
// once retired. Registers the thread on its first lease.
void enter();
// Returns the lease enter() took; the caller no longer touches the resource.
void leave();

// Called once the resource's pointer is cleared (sequentially consistent store): waits until
// every lease taken before is returned. A timeout when one is still held at `until`; an
// internal error when the membarrier fails (then nothing can be told: keep the resource).
Status drain(std::chrono::steady_clock::time_point until);

// True when enter() fences with a compiler barrier only (membarrier is available); for tests.
bool asymmetric();

// Makes enter() fence fully (the mode without membarrier), for tests of that mode: effective
// only before the process's first lease or drain (returns false after, changing nothing).
bool force_full_fence_for_testing();

}  // namespace thread_leases
}  // namespace hora
