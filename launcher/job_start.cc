#include "launcher/job_start.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "launcher/job_network.h"

extern char** environ;

namespace hora {
namespace launcher {

std::vector<std::string> current_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) env.emplace_back(*e);
  return env;
}

std::string environment_value(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : fallback;
}

StatusOr<Programs> find_programs(const LauncherOptions& o, bool need_exe, bool need_rsh,
                                 const std::string& path_env) {
  Programs programs;
  if (need_exe) {
    auto found = find_executable(o.command[0], path_env);
    if (!found.ok()) return found.status();
    programs.exe = found.value();
  }
  if (need_rsh) {
    auto words = split_words(o.rsh);
    if (!words.ok()) return Status::invalid_argument("--rsh: " + words.status().message());
    programs.rsh_words = words.value();
    auto found = find_executable(programs.rsh_words[0], path_env);
    if (!found.ok()) return Status::invalid_argument("--rsh: " + found.status().message());
    programs.rsh_exe = found.value();
  }
  return programs;
}

StatusOr<std::vector<HostSlots>> job_hosts(const LauncherOptions& o) {
  if (!o.hosts.empty()) return parse_host_list(o.hosts);
  if (!o.hostfile.empty()) return read_hostfile(o.hostfile);
  return std::vector<HostSlots>{{"localhost", o.np}};
}

StatusOr<Rendezvous> start_rendezvous(const LauncherOptions& o,
                                      const std::vector<std::string>& remote_hosts,
                                      bool multi_host) {
  auto generated = generate_secret();
  if (!generated.ok()) return generated.status();
  const std::string secret = generated.value();
  const bool local_only = remote_hosts.empty() && !multi_host;
  collectives::TcpStoreServer::Options store_options;
  store_options.bind_address = local_only ? "127.0.0.1" : "0.0.0.0";
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

StatusOr<pid_t> start_process(const LauncherOptions& o, const Programs& programs,
                              const std::string& host, bool is_local, int id,
                              const std::string& label, const std::vector<std::string>& env,
                              const EnvVars& vars, Supervisor& supervisor) {
  char cwd_buf[4096];
  const std::string cwd = ::getcwd(cwd_buf, sizeof(cwd_buf)) ? cwd_buf : ".";
  const RankLaunch launch = is_local ? local_launch(programs.exe, o.command, env, vars)
                                     : remote_launch(programs.rsh_exe, programs.rsh_words, host,
                                                     cwd, o.command, env, vars);
  if (o.verbose)
    std::fprintf(stderr, "horarun: %s on %s: %s\n", label.c_str(), host.c_str(),
                 launch.display.c_str());
  std::fflush(stderr);
  auto proc = spawn_rank(launch);
  Status added = proc.ok() ? supervisor.add_rank(id, host, !is_local, proc.value()) : proc.status();
  if (!added.ok()) return Status(added.code(), label + " (host " + host + "): " + added.message());
  return proc.value().pid;
}

}  // namespace launcher
}  // namespace hora
