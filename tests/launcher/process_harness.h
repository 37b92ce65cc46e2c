// Test harness for the launcher's process-level tests: runs the real horarun binary with its
// output in files, waits for it with a deadline (pidfd + poll, no sleeps), waits for pidfiles
// that ranks write, and checks whether a pid is still alive. Single-threaded use.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace hora {
namespace launcher_test {

struct RunResult {
  bool timed_out = false;
  int exit_code = -1;    // when it exited
  int term_signal = 0;   // when it was killed
  std::string out, err;  // its stdout and stderr
};

// A scratch directory, removed with its contents by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// One horarun process. Its stdout/stderr go to files in `dir`; `extra_env` entries ("K=V")
// are added to (or override) this process's environment.
class Horarun {
 public:
  Horarun(const std::vector<std::string>& args, const TempDir& dir,
          const std::vector<std::string>& extra_env = {});
  ~Horarun();  // SIGKILLs and reaps a horarun still running
  pid_t pid() const { return pid_; }
  // Waits up to `timeout_s`; on timeout SIGKILLs horarun and sets timed_out.
  RunResult wait(double timeout_s);

 private:
  pid_t pid_ = -1;
  int pidfd_ = -1;
  std::string out_path_, err_path_;
};

// Runs horarun to completion (30 s deadline).
RunResult run_horarun(const std::vector<std::string>& args, const TempDir& dir,
                      const std::vector<std::string>& extra_env = {});

// Waits until `path` exists and holds a complete line, up to `timeout_s`; returns the first
// line's integer, or -1 on timeout.
long wait_for_pidfile(const std::string& path, double timeout_s);
// True while `pid` exists and is not a zombie.
bool process_alive(pid_t pid);
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& text, bool executable = false);
std::vector<std::string> split_lines(const std::string& text);
// Number of lines of `text` that contain `needle`.
int count_lines_with(const std::string& text, const std::string& needle);

// The path of the built horarun and of tests/launcher in the source tree.
std::string horarun_path();
std::string test_source_dir();

}  // namespace launcher_test
}  // namespace hora
