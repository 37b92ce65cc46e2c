// The elastic protocol: how horarun's elastic driver and the workers of an elastic job agree on
// who is in the job, through the rendezvous store that horarun hosts (so no worker's death can
// take the store with it). Keys live under "hora/elastic/".
//
// Roles. The driver (horarun --min-np/--max-np/--host-discovery-script) starts every worker with
// HORA_ELASTIC=1, HORA_ELASTIC_WORKER=<id> (unique in the job, never reused), HORA_HOSTNAME and
// the store's address; it gives no HORA_RANK/HORA_SIZE: a worker learns its place from the
// store. Membership moves in generations 0, 1, 2, ...: generation g is one set of workers with
// one rank each, and every key a generation's runtime writes (hora/init/<g>/, hora/engine/<g>/,
// hora/ps/<g>/, ...) carries g, so a late message of an old membership never reaches a new one.
//
// Steps:
//  1. The driver publishes generation g: assignment_key(g) first, then latest_key() = "g".
//  2. A worker (a new one with after_generation = -1, or one resetting from generation g)
//     waits for the newest generation after its own that lists it: wait_for_assignment().
//     A worker that was in an earlier generation and is not listed in a newer one was removed
//     from the job (kFailedPrecondition naming the generation); abort_key() set by the driver
//     ends every wait with the driver's message.
//  3. A worker of generation g that must leave it (a collective failed: the peer-failure
//     errors; or every rank agreed that hosts were updated) posts reset_key(g, id) =
//     format_reset_report(...) before it waits for the next generation. The report names the
//     ranks (of generation g) it saw fail, so the driver can remove a stopped worker at once.
//  4. The driver publishes generation g+1 once every worker of g is accounted for: it exited,
//     posted its reset report, or was named by a report and then killed by the driver.
//     Survivors keep their order (rank 0 of g+1 is the lowest surviving rank of g), new
//     workers follow.
//  5. Added hosts: the driver sets hosts_updated_key(g); at the next commit() or
//     check_host_updates() rank 0 of g reads it and broadcasts the answer, so every worker
//     raises HostsUpdatedInterrupt at the same step (one collective decision), then resets as in
//     step 3 with hosts_updated = true.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/rendezvous/store.h"
#include "core/base/deadline.h"
#include "hora/status.h"

namespace hora {
namespace collectives {
namespace elastic {

// The environment a worker of an elastic job is started with (besides the store's).
inline constexpr const char* kElasticVariable = "HORA_ELASTIC";            // "1"
inline constexpr const char* kWorkerVariable = "HORA_ELASTIC_WORKER";      // the worker's id
inline constexpr const char* kTimeoutVariable = "HORA_ELASTIC_TIMEOUT_S";  // step 2's wait

// One worker's place in one generation.
struct WorkerSlot {
  int64_t worker_id = 0;
  int rank = 0;
  int local_rank = 0;
  int local_size = 1;
  int cross_rank = 0;
  int cross_size = 1;
  std::string host;  // no spaces or '='
};

struct Assignment {
  int64_t generation = 0;
  std::vector<WorkerSlot> workers;  // sorted by rank, ranks 0..size-1

  int size() const { return static_cast<int>(workers.size()); }
  // The slot of `worker_id`, or null when the generation does not list it.
  const WorkerSlot* find(int64_t worker_id) const;
};

// What a worker says when it leaves its generation (step 3).
struct ResetReport {
  bool hosts_updated = false;     // the collective decision of step 5, not a failure
  std::vector<int> failed_ranks;  // ranks of the worker's generation it saw fail
  std::string reason;             // the error text, one line
};

std::string assignment_key(int64_t generation);                // hora/elastic/assignment/<g>
std::string latest_key();                                      // hora/elastic/latest
std::string reset_key(int64_t generation, int64_t worker_id);  // hora/elastic/reset/<g>/<id>
std::string hosts_updated_key(int64_t generation);             // hora/elastic/hosts_updated/<g>
std::string abort_key();                                       // hora/elastic/abort

// Text forms: one "key=value" field per space-separated word, one line per worker.
Bytes format_assignment(const Assignment& assignment);
// kInvalidArgument naming the field when `bytes` is not an assignment (checks the ranks are
// 0..size-1 in order and the local/cross fields are in range).
StatusOr<Assignment> parse_assignment(const Bytes& bytes);
Bytes format_reset_report(const ResetReport& report);
StatusOr<ResetReport> parse_reset_report(const Bytes& bytes);

// Driver, step 1: assignment_key(g), then latest_key().
Status publish_assignment(Store& store, const Assignment& assignment);

// Worker, step 2: the newest generation after `after_generation` that lists `worker_id`.
// kTimeout at `deadline` (naming the worker and the newest generation seen);
// kFailedPrecondition when a worker that was in the job (after_generation >= 0) is not listed
// by a newer generation, or when the driver set abort_key() (its message).
StatusOr<Assignment> wait_for_assignment(Store& store, int64_t worker_id, int64_t after_generation,
                                         Deadline deadline);

}  // namespace elastic
}  // namespace collectives
}  // namespace hora
