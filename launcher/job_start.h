// What starting a job's processes needs, shared by the fixed-size job (main.cc) and the
// elastic driver: horarun's environment, the programs that start processes (the job's own
// program for local ones, the --rsh command for remote ones), the rendezvous store horarun
// hosts, and starting one process and handing it to the Supervisor.
// Called from horarun's main thread only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectives/rendezvous/tcp_store_server.h"
#include "hora/status.h"
#include "launcher/options.h"
#include "launcher/rank_process.h"
#include "launcher/supervisor.h"

namespace hora {
namespace launcher {

// horarun's own environment, "K=V" entries (passed on to the processes it starts).
std::vector<std::string> current_environment();
// One variable of horarun's environment, `fallback` when unset.
std::string environment_value(const char* name, const std::string& fallback);

// The programs that start the processes: the job's own for local ones, the remote shell
// (--rsh) for the others.
struct Programs {
  std::string exe;
  std::vector<std::string> rsh_words;
  std::string rsh_exe;
};

// Finds the job's program (when `need_exe`) and the --rsh command (when `need_rsh`) in
// `path_env`; the error names what is missing ("--rsh: ..." for the remote shell).
StatusOr<Programs> find_programs(const LauncherOptions& o, bool need_exe, bool need_rsh,
                                 const std::string& path_env);

// The hosts of the job: -H, else --hostfile, else np slots on this machine.
StatusOr<std::vector<HostSlots>> job_hosts(const LauncherOptions& o);

// The rendezvous store, its secret and what the processes are told to reach it.
struct Rendezvous {
  std::unique_ptr<collectives::TcpStoreServer> store;
  JobEnvironment job;
};

// Starts the store: bound to 127.0.0.1 and advertised as such when `remote_hosts` is empty
// and `multi_host` is false, else bound to 0.0.0.0 and advertised as job_network.h says.
StatusOr<Rendezvous> start_rendezvous(const LauncherOptions& o,
                                      const std::vector<std::string>& remote_hosts,
                                      bool multi_host);

// Starts one process of the job on `host` (directly when `is_local`, else through --rsh) with
// horarun's environment plus `vars`, and hands it to `supervisor` as `id`; returns its pid
// (the rsh's for a remote one). `label` ("rank 3") names it in --verbose lines and the error.
StatusOr<pid_t> start_process(const LauncherOptions& o, const Programs& programs,
                              const std::string& host, bool is_local, int id,
                              const std::string& label, const std::vector<std::string>& env,
                              const EnvVars& vars, Supervisor& supervisor);

}  // namespace launcher
}  // namespace hora
