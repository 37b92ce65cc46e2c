// The elastic driver: horarun's side of an elastic job (issue 37; the workers' side and the
// store keys are collectives/rendezvous/elastic_protocol.h). On when --min-np, --max-np or
// --host-discovery-script is given.
//
// Protocol:
//  1. horarun hosts the store (no worker's death can take it along) and talks to it through
//     its own TcpStoreClient. Workers start with HORA_ELASTIC=1, HORA_ELASTIC_WORKER=<id>,
//     HORA_ELASTIC_TIMEOUT_S (--elastic-timeout), HORA_HOSTNAME and the store's address,
//     never a rank or size: a worker reads its slot from the generation that lists it.
//  2. The Supervisor runs the processes (output tagged by worker id, signals, teardown); in
//     elastic mode a worker's exit is handed to the driver, not the end of the job.
//  3. Every tick (100 ms) the driver feeds ElasticState (launcher/elastic_state.h, which makes
//     every decision) with the exits seen, the reset reports of the current generation that
//     appeared in the store, the discovery script's latest result (launcher/discovery.h) and
//     the time; then it carries out the actions: SIGKILL+SIGCONT to workers, new workers
//     (locally, or through --rsh as fixed-size jobs start their ranks), publish_assignment,
//     hosts_updated_key(g), and at the end abort_key() + exit 1 or the job's exit status.
//  4. Shared-memory segments of dead local workers are unlinked after every generation change
//     and at exit (launcher/shm_cleanup.h); the store's port closes with horarun.
#pragma once

#include "launcher/options.h"

namespace hora {
namespace launcher {

// Runs an elastic job to its end; returns horarun's exit status (0 when the workers of the
// last generation exited 0; 1 on an abort; 128+signal when horarun was signalled).
int run_elastic_job(const LauncherOptions& options);

}  // namespace launcher
}  // namespace hora
