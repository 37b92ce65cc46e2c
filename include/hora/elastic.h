// Elastic mode, the C++ side (Horovod's elastic training): a job started by
// `horarun --min-np/--max-np/--host-discovery-script` keeps training when a worker dies or hosts
// are added, in the same processes. Python's hora.elastic (run, State) is built on these calls.
//
//   hora::init();                        // waits for horarun's first assignment listing us
//   for (;;) {
//     Status s = train_some_steps();     // a peer's death fails a collective (kRemote, or
//                                        // kTimeout naming a stopped rank); never an exit
//     if (!s.ok()) { restore_last_commit(); s = hora::elastic::reset(false, s.to_string()); }
//     else if (hosts_updated().value()) s = hora::elastic::reset(true, "hosts updated");
//     ...sync the state from rank 0 (broadcast), go on
//   }
//
// How it works (collectives/rendezvous/elastic_protocol.h is the protocol): horarun hosts the
// rendezvous store and publishes generations of the job, each a list of workers with their
// ranks. init() in elastic mode (HORA_ELASTIC=1) connects that store, waits up to
// HORA_ELASTIC_TIMEOUT_S for a generation listing this worker (HORA_ELASTIC_WORKER) and inits
// with its rank, size, local and cross ranks; every store key of that init carries the
// generation, so a late message of an old membership never reaches a new one.
//
// Every elastic init joins the next generation that lists this worker, so a worker leaves a
// generation with reset(), not with shutdown() and init() (horarun publishes the next
// generation only once every worker of the current one reported or exited).
//
// Process sets do not survive a reset (their ranks belong to the old membership): the sets
// given to init and those added later are dropped, and a program registers them again after
// reset, as Horovod's elastic mode requires. InitOptions' other fields are kept.
//
// Threads: reset, like init and shutdown, from one thread, with no collective being enqueued
// meanwhile. hosts_updated is a collective: every rank calls it at the same point.
#pragma once

#include <cstdint>
#include <string>

#include "hora/status.h"

namespace hora {
namespace elastic {

// Whether this process is a worker of an elastic job (HORA_ELASTIC=1 in the environment).
bool enabled();

// Leaves the current generation and joins the next: posts this worker's reset report to
// horarun (hosts_updated: the job agreed that hosts were added, not a failure; `reason`: the
// error that ended the generation, one line), shuts the runtime down without waiting on a dead
// peer (pending handles fail, the engine, process sets, communicators and fusion buffers of the
// old membership are released), waits up to HORA_ELASTIC_TIMEOUT_S for the next generation that
// lists this worker and inits again with its rank and size. Also the way back after an elastic
// init that failed (a peer died while the job started). Errors: kFailedPrecondition outside an
// elastic job, when horarun removed this worker from the job, or when horarun aborted the job
// (its message); kTimeout when no generation listing it came in time.
Status reset(bool hosts_updated, const std::string& reason);

// Whether horarun found new hosts during this generation: rank 0 asks horarun's store and
// broadcasts the answer, so every rank returns the same value from the same call (then all
// call reset(true, ...)). A collective on the global set; fails like one when a peer died.
// kFailedPrecondition when not initialised in an elastic job.
StatusOr<bool> hosts_updated();

// The current generation (0 for the job's first membership, +1 at each reset); -1 when not
// initialised or not elastic.
int64_t generation();

}  // namespace elastic
}  // namespace hora
