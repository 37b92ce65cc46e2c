// Supervisor: watches the ranks of one job until it ends. One thread (horarun's main) runs a
// poll() loop over a signalfd (SIGCHLD, SIGINT, SIGTERM, SIGHUP) and the ranks' stdout/stderr
// pipes; it never busy-waits (poll sleeps until a byte, a signal or the teardown deadline).
//
// Protocol:
//  1. Output: every line is tagged by OutputTagger and written whole to horarun's stdout or
//     stderr (and raw to DIR/rank.R.stdout|stderr with an output dir).
//  2. The first rank that exits non-zero or is killed is reported as one line,
//     "horarun: rank R (host H) exited with code C" or "... was killed by signal SIGKILL", and
//     teardown begins: SIGTERM to every rank's process group, then SIGCONT (a stopped rank
//     would otherwise hold the SIGTERM pending until SIGKILL).
//  3. SIGINT/SIGTERM/SIGHUP to horarun: the same signal goes to every group, teardown begins;
//     a second one escalates to SIGKILL at once.
//  4. Teardown: grace_s after it began, SIGKILL to every group that is left, and to every
//     orphaned descendant (horarun is a child subreaper, so orphans of ranks become its
//     children). When all ranks have exited by themselves, leftover members of their groups
//     get the same treatment, so no process of the job outlives horarun.
//  5. run() returns once every rank is reaped, every group is empty and every pipe is closed
//     (or, after SIGKILL, a last second passed: a process that left its group still holding a
//     pipe is abandoned then).
// Exit status: 0 when every rank exited 0; the first failure's exit code, or 128+signal;
// 128+signal when horarun was signalled.
//
// Elastic mode (set_observer; launcher/elastic_driver.h): step 2 does not apply. A rank's exit
// goes to the observer instead, the job goes on, and the observer's on_tick() runs every
// tick_ms (and after every batch of output) while the job runs; it may add ranks (new
// workers), signal single ranks, and end the job with finish(). Step 3 and the teardown are
// as above. "rank" is then the worker id.
//
// Not thread-safe: one thread creates it, adds ranks and runs it.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "hora/status.h"
#include "launcher/output_tagger.h"
#include "launcher/rank_process.h"

namespace hora {
namespace launcher {

class Supervisor {
 public:
  struct Options {
    double grace_s = 3.0;
    std::string output_dir;  // empty: no per-rank files
    bool verbose = false;
    int stdout_fd = 1;  // where tagged lines go
    int stderr_fd = 2;
  };

  // Blocks SIGCHLD/SIGINT/SIGTERM/SIGHUP in the calling thread (threads started later, like
  // the store's, inherit the mask), opens the signalfd, ignores SIGPIPE, makes this process a
  // child subreaper and creates the output dir. Call before starting any thread or rank.
  static StatusOr<std::unique_ptr<Supervisor>> create(const Options& options);
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Takes ownership of a started rank's pid and pipes.
  Status add_rank(int rank, const std::string& host, bool is_remote, const RankProcess& process);
  // Ends the ranks added so far (SIGTERM, grace, SIGKILL) after a start failure; returns when
  // they are gone. The caller then exits 1.
  void abort_start();
  // Runs the loop above until the job is over; returns horarun's exit status.
  int run();

  // Elastic mode. on_rank_exit is called while the supervisor walks its ranks: it must not
  // add ranks (queue the exit, act in on_tick).
  class Observer {
   public:
    virtual ~Observer() = default;
    virtual void on_rank_exit(int rank, int wait_status) = 0;
    virtual void on_tick() = 0;
  };
  // Call before run(). `observer` must outlive run().
  void set_observer(Observer* observer, int tick_ms);
  // Sends `sig` to the process group of `rank` (nothing when it is gone).
  void signal_rank(int rank, int sig);
  // Ends the job with `exit_code`: teardown of whatever is left (SIGTERM, grace, SIGKILL).
  void finish(int exit_code);

 private:
  struct Stream;
  struct Rank;
  explicit Supervisor(const Options& options);

  void handle_signals();
  void reap_children();
  void on_rank_exit(Rank* rank, int wait_status);
  void read_stream(Stream* stream);
  void close_stream(Stream* stream);
  void begin_teardown(int sig);
  void signal_everyone(int sig);
  bool anything_left();
  void write_line(int fd, const std::string& line);

  Options options_;
  int signal_fd_ = -1;
  std::vector<std::unique_ptr<Rank>> ranks_;
  bool tearing_down_ = false;
  bool killed_ = false;
  double teardown_started_s_ = 0;  // monotonic seconds
  double killed_at_s_ = 0;
  int exit_code_ = 0;
  bool have_failure_ = false;
  int received_signal_ = 0;
  Observer* observer_ = nullptr;
  int tick_ms_ = 100;
};

// "SIGKILL" for 9; "signal 99" for what has no name.
std::string signal_name(int sig);

}  // namespace launcher
}  // namespace hora
