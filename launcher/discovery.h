// Host discovery for elastic mode: --host-discovery-script CMD is run by /bin/sh every
// kDiscoveryIntervalS, and prints the hosts the job may use now, one a line:
//   host:slots     (slots a positive integer)
//   host           (one slot)
// Blank lines and lines starting with '#' are skipped. A line that is neither (an empty host,
// a bad slot count, blanks inside) is skipped with a warning that quotes it; a host listed
// twice keeps its first line. A run that exits non-zero, is killed or outlives its limit is a
// failed run: the caller keeps the previous hosts and decides when failures are persistent.
//
// DiscoveryScript runs the command without blocking its caller: poll() starts a run when one
// is due, reads what the running one printed (its stdout, and its stderr, which is passed on
// as warnings), and returns the result once the run ends. The script runs in its own process
// group (killed with horarun); its exit status comes back through a line that the wrapping
// shell prints after it, so whoever reaps horarun's children (the supervisor) may reap it.
// Single-threaded; poll() and the destructor must be called from the thread that created it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/host_list.h"

namespace hora {
namespace launcher {

inline constexpr double kDiscoveryIntervalS = 1.0;

struct DiscoveryResult {
  bool ok = false;
  std::vector<HostSlots> hosts;       // when ok
  std::vector<std::string> warnings;  // bad lines, the script's stderr
  std::string error;                  // when not ok: why the run failed
};

// Parses the output of one run (ok is true; bad lines become warnings).
DiscoveryResult parse_discovery_output(const std::string& text);

class DiscoveryScript {
 public:
  // `env`: the script's environment ("K=V"); `run_limit_s`: a run still going after this long
  // is killed and counts as failed.
  DiscoveryScript(std::string command, std::vector<std::string> env, double run_limit_s);
  ~DiscoveryScript();
  DiscoveryScript(const DiscoveryScript&) = delete;
  DiscoveryScript& operator=(const DiscoveryScript&) = delete;

  // Starts a run when none is running and the last one began kDiscoveryIntervalS ago (or
  // never); returns the result of a run that ended.
  std::optional<DiscoveryResult> poll(double now_s);
  // Kills a running run (SIGKILL to its group).
  void stop();

 private:
  std::optional<DiscoveryResult> finish(double now_s);

  std::string command_;
  std::vector<std::string> env_;
  double run_limit_s_;
  int pid_ = -1;
  int out_fd_ = -1, err_fd_ = -1;
  std::string out_, err_;
  double started_s_ = -1e18;
};

}  // namespace launcher
}  // namespace hora
