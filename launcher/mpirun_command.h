// horarun --mpi (or --backend mpi): the job is handed to Open MPI's mpirun, which then starts
// and supervises the ranks (hora::init reads OMPI_COMM_WORLD_*). This file builds that
// command line; main() prints it with --verbose and execvp's it. Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "launcher/host_list.h"

namespace hora {
namespace launcher {

struct MpirunRequest {
  int np = 1;
  std::vector<HostSlots> hosts;  // empty: no -H (mpirun's default, this host)
  bool all_hosts_local = true;
  int local_cpus = 1;                  // this machine's processor count
  bool is_root = false;                // geteuid() == 0
  bool oversubscribe = false;          // --oversubscribe given
  std::vector<std::string> env_names;  // HORA_* names to export with -x, in order
  std::vector<std::string> command;    // prog and args
};

// mpirun -np N [-H a:2,b:2] [--allow-run-as-root] [--oversubscribe] -x NAME... --tag-output
// prog args. --oversubscribe is added when asked for, or when every rank runs on this machine
// and N exceeds its processors (mpirun refuses that otherwise).
std::vector<std::string> mpirun_command(const MpirunRequest& request);

// The HORA_* variable names of `env` ("K=V" entries) worth exporting to MPI ranks: all but
// the per-rank layout and rendezvous ones, which mpirun's own variables replace.
std::vector<std::string> exportable_hora_names(const std::vector<std::string>& env);
// Whether `name` is one of those per-rank names (HORA_RANK, ..., HORA_SECRET).
bool is_layout_variable(const std::string& name);

}  // namespace launcher
}  // namespace hora
