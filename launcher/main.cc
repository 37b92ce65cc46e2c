// horarun: starts the ranks of a hora job and supervises them (see launcher/options.cc for the
// flags, supervisor.h for teardown and exit status, rank_process.h for how ranks start).
//
// On a cluster: `horarun -np 8 -H node1:4,node2:4 ./train` starts ranks 0-3 on node1 and 4-7
// on node2. Hosts other than this machine are reached with `ssh HOST` (or --rsh CMD): they need
// password-less ssh, a POSIX login shell, the program at the same path (or in PATH), and a
// route back to this machine's store port (the address is chosen as job_network.h says;
// --rendezvous-addr overrides it). The working directory is the same as here when it exists.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "launcher/elastic_driver.h"
#include "launcher/host_list.h"
#include "launcher/job_start.h"
#include "launcher/mpirun_command.h"
#include "launcher/options.h"
#include "launcher/rank_process.h"
#include "launcher/supervisor.h"
#include "launcher/timeline_repair.h"

namespace hora {
namespace launcher {
namespace {

constexpr int kExitBadInvocation = 2;
constexpr int kExitLauncherFailure = 1;

int fail(int code, const std::string& message) {
  std::fprintf(stderr, "horarun: %s\n", message.c_str());
  return code;
}

std::string format_seconds(double s) {
  std::ostringstream out;
  out << s;
  return out.str();
}

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + shell_quote(w);
  return out;
}

int hand_off_to_mpirun(const LauncherOptions& o, const std::vector<HostSlots>& hosts,
                       bool hosts_given, bool all_local, const std::string& path_env) {
  auto mpirun = find_executable("mpirun", path_env);
  if (!mpirun.ok()) return fail(kExitBadInvocation, "--mpi: mpirun not found in PATH");
  // What the ranks need travels in horarun's own environment, exported with -x.
  ::setenv("HORA_BACKEND", o.backend.empty() ? "mpi" : o.backend.c_str(), 1);
  if (!o.timeline.empty()) ::setenv("HORA_TIMELINE", o.timeline.c_str(), 1);
  if (o.start_timeout_s)
    ::setenv("HORA_START_TIMEOUT_S", format_seconds(*o.start_timeout_s).c_str(), 1);
  for (const std::string& entry : current_environment()) {
    const std::string name = entry.substr(0, entry.find('='));
    if (is_layout_variable(name)) ::unsetenv(name.c_str());
  }
  MpirunRequest req;
  req.np = o.np;
  if (hosts_given) req.hosts = hosts;
  req.all_hosts_local = all_local;
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  req.local_cpus = cpus > 0 ? static_cast<int>(cpus) : 1;
  req.is_root = ::geteuid() == 0;
  req.oversubscribe = o.oversubscribe;
  req.env_names = exportable_hora_names(current_environment());
  req.command = o.command;
  std::vector<std::string> cmd = mpirun_command(req);
  if (o.verbose) std::fprintf(stderr, "horarun: exec %s\n", join(cmd).c_str());
  std::fflush(stderr);
  std::vector<char*> argv;
  argv.reserve(cmd.size() + 1);
  for (std::string& w : cmd) argv.push_back(w.data());
  argv.push_back(nullptr);
  ::execv(mpirun.value().c_str(), argv.data());
  return fail(kExitLauncherFailure, "cannot execute " + mpirun.value());
}

// After a failed job: rank 0 may have died while writing the timeline (HORA_TIMELINE, from
// --timeline or horarun's environment). When it ran on this host, cut its torn tail and close
// the array (launcher/timeline_repair.h). A rank 0 on another host wrote its file there.
void repair_local_timeline(const std::string& option, const std::vector<RankPlacement>& ranks) {
  const std::string path = !option.empty() ? option : environment_value("HORA_TIMELINE", "");
  if (path.empty() || ::access(path.c_str(), F_OK) != 0) return;
  for (const RankPlacement& p : ranks)
    if (p.rank == 0 && !p.is_local) return;
  auto repair = repair_timeline(path);
  if (!repair.ok()) {
    std::fprintf(stderr, "horarun: %s\n", repair.status().message().c_str());
  } else if (repair.value().repaired) {
    std::fprintf(stderr,
                 "horarun: timeline '%s': rank 0 stopped while writing it; cut after its last "
                 "complete event (%lld bytes dropped) and closed the array\n",
                 path.c_str(), static_cast<long long>(repair.value().dropped_bytes));
  }
}

// The hosts other than this one that run ranks, in rank order, each once.
std::vector<std::string> remote_hosts_of(const std::vector<RankPlacement>& ranks) {
  std::vector<std::string> remote_hosts;
  for (const RankPlacement& p : ranks) {
    if (!p.is_local && (remote_hosts.empty() || remote_hosts.back() != p.host))
      remote_hosts.push_back(p.host);
  }
  return remote_hosts;
}

// Starts every rank and hands it to the supervisor. On a failure the message names the rank.
Status spawn_ranks(const LauncherOptions& o, const std::vector<RankPlacement>& ranks,
                   const Programs& programs, const JobEnvironment& job, Supervisor& supervisor) {
  const std::vector<std::string> env = current_environment();
  for (const RankPlacement& p : ranks) {
    auto started =
        start_process(o, programs, p.host, p.is_local, p.rank, "rank " + std::to_string(p.rank),
                      env, rank_environment(p, job), supervisor);
    if (!started.ok()) return started.status();
  }
  return Status::OK();
}

// Starts the store and the ranks, supervises them to the end; returns the job's exit status.
int launch_job(const LauncherOptions& o, const std::vector<RankPlacement>& ranks,
               const std::vector<std::string>& remote_hosts, const Programs& programs) {
  Supervisor::Options sup_options;
  sup_options.grace_s = o.grace_s;
  sup_options.output_dir = o.output_dir;
  sup_options.verbose = o.verbose;
  auto supervisor = Supervisor::create(sup_options);  // before the store's thread starts
  if (!supervisor.ok()) return fail(kExitLauncherFailure, supervisor.status().message());
  auto rendezvous = start_rendezvous(o, remote_hosts, /*multi_host=*/false);
  if (!rendezvous.ok()) return fail(kExitLauncherFailure, rendezvous.status().message());
  collectives::TcpStoreServer& store = *rendezvous.value().store;
  Status spawned = spawn_ranks(o, ranks, programs, rendezvous.value().job, *supervisor.value());
  if (!spawned.ok()) {
    fail(kExitLauncherFailure, spawned.message());
    supervisor.value()->abort_start();
    store.stop();
    return kExitLauncherFailure;
  }
  const int code = supervisor.value()->run();
  store.stop();
  if (code != 0) repair_local_timeline(o.timeline, ranks);
  return code;
}

int run_horarun(const std::vector<std::string>& args) {
  auto parsed = parse_options(args);
  if (!parsed.ok()) return fail(kExitBadInvocation, parsed.status().message());
  const LauncherOptions& o = parsed.value();
  if (o.help) {
    std::fputs(usage_text().c_str(), stdout);
    return 0;
  }
  if (o.elastic.enabled) return run_elastic_job(o);
  auto hosts = job_hosts(o);
  if (!hosts.ok()) return fail(kExitBadInvocation, hosts.status().message());
  const bool hosts_given = !o.hosts.empty() || !o.hostfile.empty();
  auto layout = layout_ranks(hosts.value(), o.np, this_hostname());
  if (!layout.ok()) return fail(kExitBadInvocation, layout.status().message());
  const std::vector<RankPlacement>& ranks = layout.value();
  const bool any_local =
      std::any_of(ranks.begin(), ranks.end(), [](const RankPlacement& p) { return p.is_local; });
  const std::vector<std::string> remote_hosts = remote_hosts_of(ranks);
  const std::string path_env = environment_value("PATH", "/usr/local/bin:/usr/bin:/bin");
  // The program must exist here for local ranks (remote-only jobs can't be checked from here).
  auto programs =
      find_programs(o, any_local || o.use_mpirun, !remote_hosts.empty() && !o.use_mpirun, path_env);
  if (!programs.ok()) return fail(kExitBadInvocation, programs.status().message());
  if (o.use_mpirun)
    return hand_off_to_mpirun(o, hosts.value(), hosts_given, remote_hosts.empty(), path_env);
  return launch_job(o, ranks, remote_hosts, programs.value());
}

}  // namespace
}  // namespace launcher
}  // namespace hora

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return hora::launcher::run_horarun(args);
}
