// The command line of horarun, parsed into LauncherOptions. The spellings follow horovodrun
// where it has one (-np, -H, --hostfile, --verbose, --timeline-filename, --start-timeout).
// Pure function of argv; the caller prints the error as one line and exits 2.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hora/status.h"

namespace hora {
namespace launcher {

// Elastic mode (launcher/elastic_driver.h): on when --min-np, --max-np or
// --host-discovery-script is given. -np is then the starting size.
struct ElasticOptions {
  bool enabled = false;
  int min_np = 0;                // 0: not given (defaults to -np)
  int max_np = 0;                // 0: not given (no bound beyond the slots offered)
  std::string discovery_script;  // empty: the hosts of -H/--hostfile (or localhost:np), fixed
  double timeout_s = 600.0;      // --elastic-timeout
  int reset_limit = -1;          // -1: no limit
  std::optional<std::pair<double, double>> cooldown_range;  // none: blacklisted for good
};

struct LauncherOptions {
  int np = 0;
  std::string hosts;     // -H text, empty when not given
  std::string hostfile;  // --hostfile path, empty when not given
  std::string rsh = "ssh";
  std::string backend;      // gloo, mpi, builtin, nccl, auto; empty: not set (ranks decide)
  bool use_mpirun = false;  // --mpi, or --backend mpi
  bool oversubscribe = false;
  std::string timeline;  // HORA_TIMELINE for the ranks
  std::string output_dir;
  std::optional<double> start_timeout_s;  // HORA_START_TIMEOUT_S
  double grace_s = 3.0;                   // SIGTERM -> SIGKILL grace period
  std::string rendezvous_addr;            // the address ranks use to reach the store (multi-host)
  bool verbose = false;
  bool help = false;
  std::vector<std::string> command;  // prog and its arguments
  ElasticOptions elastic;
};

// The usage text printed by --help.
std::string usage_text();

// Parses argv[1..]. Fails (kInvalidArgument) on an unknown option, a missing or malformed
// value, a missing -np or program, -H together with --hostfile. `help` set means print usage
// and exit 0 (the other fields may be unset).
StatusOr<LauncherOptions> parse_options(const std::vector<std::string>& args);

}  // namespace launcher
}  // namespace hora
