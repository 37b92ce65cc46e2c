#include "launcher/elastic_driver.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <set>

#include "collectives/rendezvous/elastic_protocol.h"
#include "collectives/rendezvous/tcp_store_client.h"
#include "launcher/discovery.h"
#include "launcher/elastic_state.h"
#include "launcher/job_network.h"
#include "launcher/job_start.h"
#include "launcher/mpirun_command.h"
#include "launcher/shm_cleanup.h"

namespace hora {
namespace launcher {
namespace {

namespace el = collectives::elastic;

constexpr int kExitBadInvocation = 2;
constexpr int kExitLauncherFailure = 1;
constexpr int kTickMs = 100;
constexpr double kDiscoveryRunLimitS = 30.0;
constexpr double kMinFallbackS = 10.0;
// A worker's wait for its next generation (HORA_ELASTIC_TIMEOUT_S) outlasts horarun's own wait
// for slots by this much, so that horarun decides first and the workers learn why (abort_key).
constexpr double kWorkerWaitSlackS = 10.0;

double now_s() {
  return std::chrono::duration<double>(Deadline::Clock::now().time_since_epoch()).count();
}

void say(const std::string& line) { std::fprintf(stderr, "horarun: %s\n", line.c_str()); }

// horarun's environment without the per-rank variables (a horarun started inside a job has
// them): an elastic worker learns its place from the store only.
std::vector<std::string> worker_base_environment() {
  std::vector<std::string> env;
  for (const std::string& entry : current_environment()) {
    std::string name = entry.substr(0, entry.find('='));
    if (name.rfind("HOROVOD_", 0) == 0) name = "HORA_" + name.substr(8);
    if (!is_layout_variable(name)) env.push_back(entry);
  }
  return env;
}

// How long after generation g's first report a silent worker is killed:
// max(2 x HORA_TIMEOUT_S, 10 s).
double fallback_seconds() {
  const double timeout = std::atof(environment_value("HORA_TIMEOUT_S", "300").c_str());
  return std::max(2.0 * timeout, kMinFallbackS);
}

class ElasticDriver : public Supervisor::Observer {
 public:
  ElasticDriver(const LauncherOptions& o, Programs programs, std::string programs_error,
                Rendezvous rendezvous, std::unique_ptr<collectives::Store> client,
                Supervisor& supervisor, ElasticState state)
      : o_(o),
        programs_(std::move(programs)),
        programs_error_(std::move(programs_error)),
        rendezvous_(std::move(rendezvous)),
        client_(std::move(client)),
        supervisor_(supervisor),
        state_(std::move(state)),
        env_(worker_base_environment()),
        this_host_(this_hostname()) {
    if (!o.elastic.discovery_script.empty())
      discovery_ = std::make_unique<DiscoveryScript>(o.elastic.discovery_script,
                                                     current_environment(), kDiscoveryRunLimitS);
  }

  void start(const std::vector<HostSlots>& hosts) { apply(state_.start(hosts, now_s())); }

  void on_rank_exit(int rank, int wait_status) override { exits_.emplace_back(rank, wait_status); }

  void on_tick() override {
    const double now = now_s();
    std::vector<std::pair<int, int>> exits;
    exits.swap(exits_);
    for (const auto& [id, status] : exits) {
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 0;
      const int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      if (!state_.over()) apply(state_.on_exit(id, code, sig, now));
    }
    if (!state_.over()) poll_reports(now);
    if (!state_.over()) poll_discovery(now);
    if (!state_.over()) apply(state_.on_tick(now));
  }

  // After the supervisor's run: no discovery run left, no segment of a dead worker.
  void cleanup() {
    if (discovery_) discovery_->stop();
    std::vector<pid_t> pids;
    for (const auto& [id, pid] : local_pids_) pids.push_back(pid);
    unlink_segments_of(pids);
  }

 private:
  void poll_reports(double now) {
    if (now < next_report_poll_s_) return;
    next_report_poll_s_ = now + kTickMs / 1000.0;
    std::vector<ElasticState::WorkerReport> reports;
    const int64_t g = state_.generation();
    for (int64_t id : state_.awaited()) {
      const std::string key = el::reset_key(g, id);
      auto there = client_->check({key});
      if (!there.ok()) return store_failed(there.status());
      if (!*there) continue;
      auto raw = client_->get(key, Deadline::after(std::chrono::seconds(10)));
      if (!raw.ok()) return store_failed(raw.status());
      auto report = el::parse_reset_report(*raw);
      if (!report.ok()) {
        say("worker " + std::to_string(id) + "'s reset report: " + report.status().message());
        report = el::ResetReport{};
      }
      reports.emplace_back(id, *report);
    }
    if (!reports.empty()) apply(state_.on_reports(reports, now));
  }

  void poll_discovery(double now) {
    if (!discovery_) return;
    std::optional<DiscoveryResult> result = discovery_->poll(now);
    if (!result) return;
    // Each run repeats a bad line: say it when it first appears.
    for (const std::string& w : result->warnings)
      if (!last_warnings_.count(w)) say("host discovery script: " + w);
    last_warnings_ = std::set<std::string>(result->warnings.begin(), result->warnings.end());
    apply(result->ok ? state_.on_hosts(result->hosts, now)
                     : state_.on_discovery_failed(result->error, now));
  }

  void store_failed(const Status& status) {
    say("the elastic job's store failed: " + status.message());
    supervisor_.finish(kExitLauncherFailure);
    failed_ = true;
  }

  void spawn(const SpawnRequest& request) {
    const bool local = is_local_host(request.host, this_host_);
    JobEnvironment job = rendezvous_.job;
    if (!local)
      job.rendezvous_addr =
          !o_.rendezvous_addr.empty() ? o_.rendezvous_addr : advertise_address({request.host});
    const std::string label = "worker " + std::to_string(request.worker_id);
    const bool have_program = local ? !programs_.exe.empty() : !programs_.rsh_exe.empty();
    StatusOr<pid_t> pid = Status::invalid_argument(programs_error_);
    if (have_program)
      pid = start_process(o_, programs_, request.host, local, static_cast<int>(request.worker_id),
                          label, env_,
                          elastic_worker_environment(request.worker_id, request.host, job,
                                                     o_.elastic.timeout_s + kWorkerWaitSlackS),
                          supervisor_);
    if (!pid.ok()) {
      say("cannot start " + label + " on " + request.host + ": " + pid.status().message());
      exits_.emplace_back(static_cast<int>(request.worker_id), 127 << 8);  // counts as failed
      return;
    }
    if (local) local_pids_[request.worker_id] = *pid;
  }

  void apply(const ElasticActions& a) {
    if (failed_) return;
    for (int64_t id : a.kill) {
      supervisor_.signal_rank(static_cast<int>(id), SIGKILL);
      supervisor_.signal_rank(static_cast<int>(id), SIGCONT);
    }
    for (const std::string& note : a.notes) say(note);
    for (const SpawnRequest& request : a.spawn) spawn(request);
    if (a.publish) {
      Status published = el::publish_assignment(*client_, *a.publish);
      if (!published.ok()) return store_failed(published);
      clean_dead_segments();
    }
    if (a.hosts_updated) {
      Status set = client_->set(el::hosts_updated_key(*a.hosts_updated), {'1'});
      if (!set.ok()) return store_failed(set);
    }
    if (a.abort) {
      say(*a.abort);
      const std::string& m = *a.abort;
      Status set = client_->set(el::abort_key(), collectives::Bytes(m.begin(), m.end()));
      if (!set.ok()) say("cannot tell the workers: " + set.message());
      supervisor_.finish(kExitLauncherFailure);
    } else if (a.finish) {
      // Workers still waiting for a generation learn that there is none (their wait ends at
      // once rather than at SIGTERM).
      const std::string m = "the job is complete";
      client_->set(el::abort_key(), collectives::Bytes(m.begin(), m.end())).IgnoreError();
      supervisor_.finish(*a.finish);
    }
  }

  // The segments of local workers that ended, but not of a pid a running worker reuses.
  void clean_dead_segments() {
    const std::vector<int64_t> running = state_.running();
    std::set<pid_t> live, dead;
    for (const auto& [id, pid] : local_pids_) {
      const bool runs = std::find(running.begin(), running.end(), id) != running.end();
      (runs ? live : dead).insert(pid);
    }
    std::vector<pid_t> doomed;
    for (pid_t pid : dead)
      if (!live.count(pid)) doomed.push_back(pid);
    unlink_segments_of(doomed);
  }

  const LauncherOptions& o_;
  Programs programs_;
  std::string programs_error_;
  Rendezvous rendezvous_;
  std::unique_ptr<collectives::Store> client_;
  Supervisor& supervisor_;
  ElasticState state_;
  std::vector<std::string> env_;
  std::string this_host_;
  std::unique_ptr<DiscoveryScript> discovery_;
  std::vector<std::pair<int, int>> exits_;  // (worker id, wait status) not yet handled
  std::map<int64_t, pid_t> local_pids_;
  std::set<std::string> last_warnings_;  // of the last discovery run
  double next_report_poll_s_ = 0;
  bool failed_ = false;
};

ElasticConfig config_of(const LauncherOptions& o) {
  ElasticConfig c;
  c.np = o.np;
  c.min_np = o.elastic.min_np;
  c.max_np = o.elastic.max_np;
  c.timeout_s = o.elastic.timeout_s;
  c.reset_limit = o.elastic.reset_limit;
  c.fallback_s = fallback_seconds();
  c.discovery = !o.elastic.discovery_script.empty();
  return c;
}

Blacklist make_blacklist(const LauncherOptions& o) {
  auto engine = std::make_shared<std::mt19937_64>(std::random_device{}());
  return Blacklist(o.elastic.cooldown_range,
                   [engine] { return std::uniform_real_distribution<double>(0.0, 1.0)(*engine); });
}

int fail(const std::string& message) {
  say(message);
  return kExitLauncherFailure;
}

}  // namespace

int run_elastic_job(const LauncherOptions& o) {
  const bool discovery = !o.elastic.discovery_script.empty();
  std::vector<HostSlots> hosts;
  if (!discovery) {
    auto fixed = job_hosts(o);
    if (!fixed.ok()) {
      say(fixed.status().message());
      return kExitBadInvocation;
    }
    hosts = fixed.value();
  }
  const std::string path_env = environment_value("PATH", "/usr/local/bin:/usr/bin:/bin");
  // Found now; a missing one fails only the workers that need it (hosts may come and go).
  std::string programs_error;
  Programs programs;
  auto exe = find_programs(o, true, false, path_env);
  if (exe.ok()) {
    programs = exe.value();
  } else {
    programs_error = exe.status().message();
  }
  auto rsh = find_programs(o, false, true, path_env);
  if (rsh.ok()) {
    programs.rsh_words = rsh.value().rsh_words;
    programs.rsh_exe = rsh.value().rsh_exe;
  } else if (programs_error.empty()) {
    programs_error = rsh.status().message();
  }
  std::vector<std::string> remote_hosts;
  const std::string here = this_hostname();
  for (const HostSlots& h : hosts)
    if (!is_local_host(h.host, here)) remote_hosts.push_back(h.host);

  Supervisor::Options sup_options;
  sup_options.grace_s = o.grace_s;
  sup_options.output_dir = o.output_dir;
  sup_options.verbose = o.verbose;
  auto supervisor = Supervisor::create(sup_options);  // before the store's thread starts
  if (!supervisor.ok()) return fail(supervisor.status().message());
  auto rendezvous = start_rendezvous(o, remote_hosts, discovery);
  if (!rendezvous.ok()) return fail(rendezvous.status().message());
  collectives::TcpStoreServer* server = rendezvous.value().store.get();
  auto client = collectives::TcpStoreClient::connect(
      "127.0.0.1", rendezvous.value().job.rendezvous_port, rendezvous.value().job.secret,
      Deadline::after(std::chrono::seconds(10)));
  if (!client.ok()) {
    server->stop();
    return fail("cannot reach the elastic job's store: " + client.status().message());
  }
  ElasticDriver driver(o, programs, programs_error, std::move(rendezvous).value(),
                       std::move(client).value(), *supervisor.value(),
                       ElasticState(config_of(o), make_blacklist(o)));
  supervisor.value()->set_observer(&driver, kTickMs);
  driver.start(hosts);
  const int code = supervisor.value()->run();
  driver.cleanup();
  server->stop();
  return code;
}

}  // namespace launcher
}  // namespace hora
