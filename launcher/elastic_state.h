// ElasticState: the decisions of horarun's elastic driver, as a pure state machine. The driver
// (launcher/elastic_driver.h) feeds it events (a worker exited, a worker's reset report was
// seen, discovery offered hosts or failed, time passed) and carries out the actions it returns
// (start workers, kill workers, publish a generation, set hosts_updated, abort, end the job).
// No processes, store or clock here: times are the caller's monotonic seconds.
//
// Protocol (collectives/rendezvous/elastic_protocol.h is the workers' side):
//  - Generation 0 is -np workers (ids 0, 1, ...) on the first slots offered. Worker ids are
//    never reused.
//  - A member of generation g is accounted for when it exited, posted its reset report, or
//    was killed by the driver: named failed by a report while it had not reported itself, not
//    reported within fallback_s after the first report or failure of g, or left on a host
//    that discovery stopped offering (or with fewer slots than its workers).
//  - A failure (non-zero exit, death by signal, named by a report, the fallback) counts against
//    the worker's host in the Blacklist; a host that discovery stops offering is not
//    blacklisted.
//  - When every member is accounted for: at least one exited 0 -> the job is complete
//    (Horovod's rule; members waiting for g+1 are ended) with 0 when no member of g failed,
//    else the first failure's status. Otherwise generation g+1 = the
//    members that reported (rank order kept) + new workers on free slots of hosts not
//    blacklisted, up to --max-np. Publishing g+1 with g+1 > --reset-limit aborts instead.
//  - Free slots while g runs (hosts offered, not blacklisted, beyond the workers running,
//    size < --max-np, no member finished with 0): hosts_updated is set for g once, and the
//    workers reset together (their reports make them accounted for as above).
//  - Fewer than --min-np workers for the next generation: wait for slots up to
//    --elastic-timeout (counted from the first failure or report of the generation that
//    ended, so the driver decides before the survivors' own waits end), then abort naming
//    min-np and what discovery offers. Without a discovery script and with no host coming
//    back from a cooldown, nothing can add slots: abort at once. A discovery script failing
//    for --elastic-timeout in a row also aborts.
// Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "collectives/rendezvous/elastic_protocol.h"
#include "launcher/blacklist.h"
#include "launcher/host_list.h"

namespace hora {
namespace launcher {

struct ElasticConfig {
  int np = 1;      // generation 0's size
  int min_np = 1;  // fewest workers to go on with
  int max_np = 0;  // 0: no bound
  double timeout_s = 600.0;
  int reset_limit = -1;      // -1: no limit
  double fallback_s = 10.0;  // see the protocol above
  bool discovery = false;    // hosts come from a discovery script (else fixed)
};

struct SpawnRequest {
  int64_t worker_id = 0;
  std::string host;
};

// What the driver does after one event, in this order: kill, spawn, publish, hosts_updated,
// then abort or finish.
struct ElasticActions {
  std::vector<int64_t> kill;  // SIGKILL, then SIGCONT
  std::vector<SpawnRequest> spawn;
  std::optional<collectives::elastic::Assignment> publish;
  std::optional<int64_t> hosts_updated;  // set hosts_updated_key(g)
  std::vector<std::string> notes;        // lines for horarun's stderr
  std::optional<std::string> abort;      // set abort_key(), end the workers, exit 1
  std::optional<int> finish;             // the job is over: horarun's exit status (the
                                         // driver sets abort_key() to end any worker's wait)
};

class ElasticState {
 public:
  ElasticState(const ElasticConfig& config, Blacklist blacklist);

  // The hosts known at the start (-H/--hostfile/localhost, or none until discovery answers).
  ElasticActions start(const std::vector<HostSlots>& hosts, double now_s);
  // exit_code when it exited, else 0 and `signal` the signal that killed it.
  ElasticActions on_exit(int64_t worker_id, int exit_code, int signal, double now_s);
  // A reset report of the current generation.
  ElasticActions on_report(int64_t worker_id, const collectives::elastic::ResetReport& report,
                           double now_s);
  // The reports read in one poll, together: all of them count as reported before any report's
  // failed ranks are acted on, so a worker that reported is never killed for having left.
  using WorkerReport = std::pair<int64_t, collectives::elastic::ResetReport>;
  ElasticActions on_reports(const std::vector<WorkerReport>& reports, double now_s);
  ElasticActions on_hosts(const std::vector<HostSlots>& hosts, double now_s);
  ElasticActions on_discovery_failed(const std::string& error, double now_s);
  ElasticActions on_tick(double now_s);

  int64_t generation() const { return generation_; }  // the newest published, -1 before
  bool over() const { return over_; }
  // The members of the current generation that are running and have not reported: whose
  // reset keys the driver polls.
  std::vector<int64_t> awaited() const;
  // The ids of every worker started that is still running.
  std::vector<int64_t> running() const;

 private:
  struct Worker {
    std::string host;
    bool alive = true;
    bool reported = false;   // in the current generation
    bool exited_ok = false;  // exited with 0
  };

  void advance(double now_s, ElasticActions& out);
  void end_generation(double now_s, ElasticActions& out);
  void try_compose(double now_s, ElasticActions& out);
  void maybe_hosts_updated(double now_s, ElasticActions& out);
  void fail_worker(int64_t id, const std::string& why, bool blacklist, double now_s,
                   ElasticActions& out);
  void kill_worker(int64_t id, const std::string& why, bool blacklist, double now_s,
                   ElasticActions& out);
  void abort(const std::string& message, ElasticActions& out);
  std::vector<std::string> free_slots(double now_s) const;
  std::string describe(int64_t id) const;
  std::string offered() const;

  ElasticConfig config_;
  Blacklist blacklist_;
  std::vector<HostSlots> hosts_;
  std::map<int64_t, Worker> workers_;
  int64_t next_id_ = 0;
  int64_t generation_ = -1;
  std::vector<int64_t> members_;  // of generation_, in rank order
  // Between generations (the next one not published yet):
  bool composing_ = false;
  std::vector<int64_t> survivors_;
  double composing_since_s_ = 0;
  bool wait_noted_ = false;
  // Of the current generation:
  std::optional<double> trouble_s_;  // the first report or failure
  std::optional<int> first_failure_status_;
  bool hosts_updated_sent_ = false;
  std::optional<double> discovery_failing_since_s_;
  bool over_ = false;
};

// Generation `generation`'s assignment of `ids` (rank order) on `hosts` (one per id): local
// ranks count each host's workers, cross ranks the hosts with the same local rank (Horovod's).
collectives::elastic::Assignment make_assignment(int64_t generation,
                                                 const std::vector<int64_t>& ids,
                                                 const std::vector<std::string>& hosts);

}  // namespace launcher
}  // namespace hora
