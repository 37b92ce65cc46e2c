#include "tests/launcher/process_harness.h"

#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

extern char** environ;

namespace hora {
namespace launcher_test {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int remove_entry(const char* path, const struct stat*, int, struct FTW*) { return ::remove(path); }

}  // namespace

std::string horarun_path() { return HORARUN_PATH; }
std::string test_source_dir() { return LAUNCHER_TEST_DIR; }

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/horarun_test.XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data())) path_ = buf.data();
}

TempDir::~TempDir() {
  if (!path_.empty()) ::nftw(path_.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

Horarun::Horarun(const std::vector<std::string>& args, const TempDir& dir,
                 const std::vector<std::string>& extra_env) {
  static int counter = 0;
  ++counter;
  out_path_ = dir.file("horarun." + std::to_string(counter) + ".out");
  err_path_ = dir.file("horarun." + std::to_string(counter) + ".err");
  std::vector<std::string> env;
  std::set<std::string> overridden;
  for (const std::string& e : extra_env) overridden.insert(e.substr(0, e.find('=')));
  for (char** e = environ; *e; ++e) {
    const std::string entry(*e);
    if (!overridden.count(entry.substr(0, entry.find('=')))) env.push_back(entry);
  }
  env.insert(env.end(), extra_env.begin(), extra_env.end());
  std::vector<std::string> argv = {horarun_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv, cenv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  for (std::string& e : env) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  const int out_fd = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err_fd = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(out_fd, 1);
    ::dup2(err_fd, 2);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    ::dup2(null_fd, 0);
    ::execve(cargv[0], cargv.data(), cenv.data());
    ::_exit(126);
  }
  ::close(out_fd);
  ::close(err_fd);
  pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
}

Horarun::~Horarun() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    int status;
    ::waitpid(pid_, &status, 0);
  }
  if (pidfd_ >= 0) ::close(pidfd_);
}

RunResult Horarun::wait(double timeout_s) {
  RunResult r;
  const double deadline = now_s() + timeout_s;
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) break;
    const double left = deadline - now_s();
    if (left <= 0) {
      r.timed_out = true;
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &status, 0);
      break;
    }
    if (pidfd_ >= 0) {
      struct pollfd p = {pidfd_, POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(left * 1000) + 1);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // no pidfd: poll the pid
    }
  }
  pid_ = -1;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
  r.out = read_file(out_path_);
  r.err = read_file(err_path_);
  return r;
}

RunResult run_horarun(const std::vector<std::string>& args, const TempDir& dir,
                      const std::vector<std::string>& extra_env) {
  Horarun h(args, dir, extra_env);
  return h.wait(30.0);
}

long wait_for_pidfile(const std::string& path, double timeout_s) {
  const double deadline = now_s() + timeout_s;
  while (now_s() < deadline) {
    const std::string text = read_file(path);
    const size_t nl = text.find('\n');
    if (nl != std::string::npos) return std::strtol(text.substr(0, nl).c_str(), nullptr, 10);
    // Polling a file with a deadline: the rank gives no other signal that it is ready.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return -1;
}

bool process_alive(pid_t pid) {
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0) return false;
  // read(), not ifstream: reading the stat of a process that just exited fails with ESRCH.
  const std::string path = "/proc/" + std::to_string(pid) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  const ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return false;
  const std::string stat(buf, static_cast<size_t>(n));
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return false;
  return stat[paren + 2] != 'Z' && stat[paren + 2] != 'X';
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& text, bool executable) {
  {
    std::ofstream out(path);
    out << text;
  }
  ::chmod(path.c_str(), executable ? 0755 : 0644);
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

int count_lines_with(const std::string& text, const std::string& needle) {
  int n = 0;
  for (const std::string& line : split_lines(text))
    if (line.find(needle) != std::string::npos) ++n;
  return n;
}

}  // namespace launcher_test
}  // namespace hora
