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

#include "collectives/rendezvous/tcp_store_server.h"
#include "launcher/host_list.h"
#include "launcher/job_network.h"
#include "launcher/mpirun_command.h"
#include "launcher/options.h"
#include "launcher/rank_process.h"
#include "launcher/supervisor.h"
#include "launcher/timeline_repair.h"

extern char** environ;

namespace hora {
namespace launcher {
namespace {

constexpr int kExitBadInvocation = 2;
constexpr int kExitLauncherFailure = 1;

int fail(int code, const std::string& message) {
  std::fprintf(stderr, "horarun: %s\n", message.c_str());
  return code;
}

// horarun's own environment is read here only: the whole of it (to pass on to the ranks), or
// one variable (`fallback` when unset).
std::vector<std::string> current_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}
std::string environment_value(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : fallback;
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

// The hosts of the job: -H, else --hostfile, else np slots on this machine.
StatusOr<std::vector<HostSlots>> job_hosts(const LauncherOptions& o) {
  if (!o.hosts.empty()) return parse_host_list(o.hosts);
  if (!o.hostfile.empty()) return read_hostfile(o.hostfile);
  return std::vector<HostSlots>{{"localhost", o.np}};
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

// The programs that start the ranks: the job's own for local ranks, the remote shell (--rsh)
// for the others.
struct Programs {
  std::string exe;
  std::vector<std::string> rsh_words;
  std::string rsh_exe;
};

// The rendezvous store, its secret and what the ranks are told to reach it.
struct Rendezvous {
  std::unique_ptr<collectives::TcpStoreServer> store;
  JobEnvironment job;
};

StatusOr<Rendezvous> start_rendezvous(const LauncherOptions& o,
                                      const std::vector<std::string>& remote_hosts) {
  auto generated = generate_secret();
  if (!generated.ok()) return generated.status();
  const std::string secret = generated.value();
  collectives::TcpStoreServer::Options store_options;
  store_options.bind_address = remote_hosts.empty() ? "127.0.0.1" : "0.0.0.0";
  store_options.port = 0;
  store_options.secret = secret;
  auto store = collectives::TcpStoreServer::start(store_options);
  if (!store.ok())
    return Status::internal("cannot start the rendezvous store: " + store.status().to_string());
  Rendezvous rv;
  rv.store = std::move(store).value();
  JobEnvironment& job = rv.job;
  job.rendezvous_addr = remote_hosts.empty()         ? "127.0.0.1"
                        : !o.rendezvous_addr.empty() ? o.rendezvous_addr
                                                     : advertise_address(remote_hosts);
  job.rendezvous_port = rv.store->port();
  job.secret = secret;
  job.backend = o.backend;
  job.timeline = o.timeline;
  job.start_timeout_s = o.start_timeout_s;
  if (o.verbose)
    std::fprintf(stderr, "horarun: rendezvous store on %s:%d, ranks reach it at %s:%d\n",
                 store_options.bind_address.c_str(), job.rendezvous_port,
                 job.rendezvous_addr.c_str(), job.rendezvous_port);
  return rv;
}

// Starts every rank and hands it to the supervisor. On a failure the message names the rank.
Status spawn_ranks(const LauncherOptions& o, const std::vector<RankPlacement>& ranks,
                   const Programs& programs, const JobEnvironment& job, Supervisor& supervisor) {
  char cwd_buf[4096];
  const std::string cwd = ::getcwd(cwd_buf, sizeof(cwd_buf)) ? cwd_buf : ".";
  const std::vector<std::string> env = current_environment();
  for (const RankPlacement& p : ranks) {
    const EnvVars vars = rank_environment(p, job);
    const RankLaunch launch = p.is_local ? local_launch(programs.exe, o.command, env, vars)
                                         : remote_launch(programs.rsh_exe, programs.rsh_words,
                                                         p.host, cwd, o.command, env, vars);
    if (o.verbose)
      std::fprintf(stderr, "horarun: rank %d on %s: %s\n", p.rank, p.host.c_str(),
                   launch.display.c_str());
    std::fflush(stderr);
    auto proc = spawn_rank(launch);
    Status added =
        proc.ok() ? supervisor.add_rank(p.rank, p.host, !p.is_local, proc.value()) : proc.status();
    if (!added.ok()) {
      return Status(added.code(), "rank " + std::to_string(p.rank) + " (host " + p.host +
                                      "): " + added.message());
    }
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
  auto rendezvous = start_rendezvous(o, remote_hosts);
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
  Programs programs;
  if (any_local || o.use_mpirun) {
    auto found = find_executable(o.command[0], path_env);
    if (!found.ok()) return fail(kExitBadInvocation, found.status().message());
    programs.exe = found.value();
  }
  if (o.use_mpirun)
    return hand_off_to_mpirun(o, hosts.value(), hosts_given, remote_hosts.empty(), path_env);
  if (!remote_hosts.empty()) {
    auto words = split_words(o.rsh);
    if (!words.ok()) return fail(kExitBadInvocation, "--rsh: " + words.status().message());
    programs.rsh_words = words.value();
    auto found = find_executable(programs.rsh_words[0], path_env);
    if (!found.ok()) return fail(kExitBadInvocation, "--rsh: " + found.status().message());
    programs.rsh_exe = found.value();
  }
  return launch_job(o, ranks, remote_hosts, programs);
}

}  // namespace
}  // namespace launcher
}  // namespace hora

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return hora::launcher::run_horarun(args);
}
