#include "launcher/supervisor.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "core/base/deadline.h"

namespace hora {
namespace launcher {
namespace {

constexpr double kAbandonAfterKillS = 1.0;  // a pipe still open this long after SIGKILL
constexpr int kKilledPollMs = 20;           // re-check for new orphans after SIGKILL

// The pids whose parent is this process, read from /proc (orphans reparented to us).
std::vector<pid_t> own_children() {
  std::vector<pid_t> pids;
  const pid_t self = ::getpid();
  DIR* dir = ::opendir("/proc");
  if (!dir) return pids;
  while (struct dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    // Plain read(): the process may vanish meanwhile (ESRCH), which iostreams would throw.
    const std::string path = "/proc/" + std::string(e->d_name) + "/stat";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[512];
    const ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
    ::close(fd);
    if (n <= 0) continue;
    buf[n] = '\0';
    const char* paren = std::strrchr(buf, ')');  // the command name may hold spaces and parens
    char state = 0;
    long ppid = 0;
    if (paren && std::sscanf(paren + 1, " %c %ld", &state, &ppid) == 2 && ppid == self)
      pids.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(dir);
  return pids;
}

Status make_dirs(const std::string& path) {
  std::string cur;
  std::stringstream parts(path);
  std::string part;
  if (!path.empty() && path[0] == '/') cur = "/";
  while (std::getline(parts, part, '/')) {
    if (part.empty()) continue;
    cur += part + "/";
    if (::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST)
      return Status::io("cannot create --output-dir '" + path + "': " + std::strerror(errno));
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Status::io("--output-dir '" + path + "' is not a directory");
  return Status::OK();
}

}  // namespace

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  if (abbrev) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(sig);
}

struct Supervisor::Stream {
  Stream(int rank, StreamKind kind, OutputTagger::LineSink sink)
      : tagger(rank, kind, std::move(sink)) {}
  int fd = -1;
  int file_fd = -1;
  OutputTagger tagger;
};

struct Supervisor::Rank {
  int rank = 0;
  std::string host;
  bool is_remote = false;
  pid_t pid = -1;
  bool reaped = false;
  bool group_gone = false;
  std::unique_ptr<Stream> out, err;
};

Supervisor::Supervisor(const Options& options) : options_(options) {}

Supervisor::~Supervisor() {
  for (auto& r : ranks_) {
    for (Stream* s : {r->out.get(), r->err.get()}) {
      if (s->fd >= 0) ::close(s->fd);
      if (s->file_fd >= 0) ::close(s->file_fd);
    }
  }
  if (signal_fd_ >= 0) ::close(signal_fd_);
}

StatusOr<std::unique_ptr<Supervisor>> Supervisor::create(const Options& options) {
  std::unique_ptr<Supervisor> s(new Supervisor(options));
  if (!options.output_dir.empty()) {
    Status st = make_dirs(options.output_dir);
    if (!st.ok()) return st;
  }
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, sig);
  if (::pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0) return Status::io("pthread_sigmask failed");
  s->signal_fd_ = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (s->signal_fd_ < 0) return Status::io(std::string("signalfd: ") + std::strerror(errno));
  ::signal(SIGPIPE, SIG_IGN);
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  return s;
}

Status Supervisor::add_rank(int rank, const std::string& host, bool is_remote,
                            const RankProcess& process) {
  auto r = std::make_unique<Rank>();
  r->rank = rank;
  r->host = host;
  r->is_remote = is_remote;
  r->pid = process.pid;
  const int out_fd = options_.stdout_fd, err_fd = options_.stderr_fd;
  r->out = std::make_unique<Stream>(
      rank, StreamKind::kStdout, [this, out_fd](const std::string& l) { write_line(out_fd, l); });
  r->err = std::make_unique<Stream>(
      rank, StreamKind::kStderr, [this, err_fd](const std::string& l) { write_line(err_fd, l); });
  r->out->fd = process.stdout_fd;
  r->err->fd = process.stderr_fd;
  Status status;
  for (Stream* s : {r->out.get(), r->err.get()}) {
    ::fcntl(s->fd, F_SETFL, ::fcntl(s->fd, F_GETFL) | O_NONBLOCK);
    if (!options_.output_dir.empty()) {
      const std::string path = options_.output_dir + "/rank." + std::to_string(rank) +
                               (s == r->out.get() ? ".stdout" : ".stderr");
      s->file_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (s->file_fd < 0 && status.ok())
        status = Status::io("cannot write '" + path + "': " + std::strerror(errno));
    }
  }
  ranks_.push_back(std::move(r));
  return status;
}

void Supervisor::write_line(int fd, const std::string& line) {
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // horarun's own output is gone (EPIPE): drop, keep supervising
    done += static_cast<size_t>(n);
  }
}

void Supervisor::read_stream(Stream* s) {
  char buf[65536];
  while (s->fd >= 0) {
    const ssize_t n = ::read(s->fd, buf, sizeof(buf));
    if (n > 0) {
      s->tagger.feed(buf, static_cast<size_t>(n));
      if (s->file_fd >= 0) {
        ssize_t w = ::write(s->file_fd, buf, static_cast<size_t>(n));
        (void)w;
      }
      if (static_cast<size_t>(n) < sizeof(buf)) return;  // drained for now
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    close_stream(s);  // EOF or error
  }
}

void Supervisor::close_stream(Stream* s) {
  if (s->fd < 0) return;
  s->tagger.finish();
  ::close(s->fd);
  s->fd = -1;
  if (s->file_fd >= 0) ::close(s->file_fd);
  s->file_fd = -1;
}

void Supervisor::signal_everyone(int sig) {
  for (auto& r : ranks_) {
    if (r->group_gone) continue;
    if (::killpg(r->pid, sig) != 0 && errno == ESRCH) r->group_gone = true;
  }
  for (pid_t pid : own_children()) {
    bool is_rank = false;
    for (auto& r : ranks_) is_rank = is_rank || r->pid == pid;
    if (!is_rank) ::kill(pid, sig);
  }
}

void Supervisor::begin_teardown(int sig) {
  if (tearing_down_) return;
  tearing_down_ = true;
  teardown_started_s_ =
      std::chrono::duration<double>(Deadline::Clock::now().time_since_epoch()).count();
  signal_everyone(sig);
  // A stopped rank (SIGSTOP, a debugger's stop) holds the signal pending until it runs again:
  // let it run, so it ends now rather than at SIGKILL after the grace period.
  signal_everyone(SIGCONT);
}

void Supervisor::on_rank_exit(Rank* r, int wait_status) {
  r->reaped = true;
  const bool exited = WIFEXITED(wait_status);
  const int code = exited ? WEXITSTATUS(wait_status) : 0;
  const int sig = WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0;
  const std::string how = exited ? "exited with code " + std::to_string(code)
                                 : "was killed by signal " + signal_name(sig);
  const bool failed = !exited || code != 0;
  if (options_.verbose)
    write_line(options_.stderr_fd, "horarun: rank " + std::to_string(r->rank) + " " + how + "\n");
  if (observer_ != nullptr && !tearing_down_) {
    observer_->on_rank_exit(r->rank, wait_status);
    return;
  }
  if (!failed || have_failure_ || tearing_down_ || received_signal_ != 0) return;
  have_failure_ = true;
  exit_code_ = exited ? code : 128 + sig;
  std::string line = "horarun: rank " + std::to_string(r->rank) + " (host " + r->host + ") " + how;
  if (r->is_remote && exited && code == 255)
    line += " (the --rsh command failed: is the host reachable?)";
  write_line(options_.stderr_fd, line + "\n");
  begin_teardown(SIGTERM);
}

void Supervisor::reap_children() {
  while (true) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid < 0 && errno == EINTR) continue;
    if (pid <= 0) return;
    for (auto& r : ranks_)
      if (r->pid == pid && !r->reaped) on_rank_exit(r.get(), status);
    // Anything else is an orphaned descendant (we are its subreaper): reaped, nothing to say.
  }
}

void Supervisor::handle_signals() {
  struct signalfd_siginfo info;
  while (::read(signal_fd_, &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) {
    const int sig = static_cast<int>(info.ssi_signo);
    if (sig == SIGCHLD) continue;  // reaped below
    if (tearing_down_) {
      // A signal while the job is already ending (a second Ctrl-C): no more grace.
      if (!killed_) {
        signal_everyone(SIGKILL);
        killed_ = true;
        killed_at_s_ =
            std::chrono::duration<double>(Deadline::Clock::now().time_since_epoch()).count();
      }
      continue;
    }
    received_signal_ = sig;
    exit_code_ = 128 + sig;
    write_line(options_.stderr_fd, "horarun: received " + signal_name(sig) + ", ending all " +
                                       std::to_string(ranks_.size()) + " ranks\n");
    begin_teardown(sig);
  }
  reap_children();
}

bool Supervisor::anything_left() {
  reap_children();
  for (auto& r : ranks_) {
    if (!r->reaped || r->out->fd >= 0 || r->err->fd >= 0) return true;
    if (!r->group_gone) {
      if (::killpg(r->pid, 0) == 0) return true;
      if (errno == ESRCH) r->group_gone = true;
    }
  }
  // Children left (orphaned descendants, all ranks being reaped): reap those that ended; any
  // still running means the job is not over.
  int status = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0 || (pid < 0 && errno == EINTR)) {
  }
  return pid == 0;
}

void Supervisor::set_observer(Observer* observer, int tick_ms) {
  observer_ = observer;
  tick_ms_ = tick_ms;
}

void Supervisor::signal_rank(int rank, int sig) {
  for (auto& r : ranks_) {
    if (r->rank != rank || r->group_gone) continue;
    if (::killpg(r->pid, sig) != 0 && errno == ESRCH) r->group_gone = true;
  }
}

void Supervisor::finish(int exit_code) {
  if (tearing_down_) return;
  exit_code_ = exit_code;
  have_failure_ = exit_code != 0;
  begin_teardown(SIGTERM);
}

void Supervisor::abort_start() {
  have_failure_ = true;  // the start failure was reported by the caller
  begin_teardown(SIGTERM);
  run();
}

int Supervisor::run() {
  auto now_s = [] {
    return std::chrono::duration<double>(Deadline::Clock::now().time_since_epoch()).count();
  };
  std::vector<struct pollfd> fds;
  std::vector<Stream*> streams;
  while (true) {
    if (observer_ != nullptr && !tearing_down_) observer_->on_tick();
    if (!tearing_down_ && observer_ == nullptr) {
      bool all_reaped = true;
      for (auto& r : ranks_) all_reaped = all_reaped && r->reaped;
      // Every rank ended by itself: end leftover members of their groups and orphans too.
      if (all_reaped) begin_teardown(SIGTERM);
    }
    // After SIGKILL, keep killing: a process that left its group (setsid) becomes our child
    // only once its parent died, which no event announces, hence the short poll below.
    if (killed_) signal_everyone(SIGKILL);
    if (tearing_down_ && !anything_left()) break;
    int timeout_ms = -1;
    if (tearing_down_) {
      const double due =
          killed_ ? killed_at_s_ + kAbandonAfterKillS : teardown_started_s_ + options_.grace_s;
      const double now = now_s();
      if (now >= due) {
        if (killed_) break;  // a process outside every group holds a pipe: abandon it
        signal_everyone(SIGKILL);
        killed_ = true;
        killed_at_s_ = now;
        continue;
      }
      timeout_ms = static_cast<int>(std::ceil((due - now) * 1000.0));
      if (killed_ && timeout_ms > kKilledPollMs) timeout_ms = kKilledPollMs;
    } else if (observer_ != nullptr) {
      timeout_ms = tick_ms_;
    }
    fds.clear();
    streams.clear();
    fds.push_back({signal_fd_, POLLIN, 0});
    streams.push_back(nullptr);
    for (auto& r : ranks_) {
      for (Stream* s : {r->out.get(), r->err.get()}) {
        if (s->fd < 0) continue;
        fds.push_back({s->fd, POLLIN, 0});
        streams.push_back(s);
      }
    }
    const int n = ::poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0 && errno != EINTR) break;  // cannot happen with valid fds; don't spin
    if (n <= 0) continue;
    for (size_t i = 1; i < fds.size(); ++i)
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) read_stream(streams[i]);
    if (fds[0].revents & POLLIN) handle_signals();
  }
  for (auto& r : ranks_) {
    for (Stream* s : {r->out.get(), r->err.get()}) {
      if (s->fd >= 0) read_stream(s);
      close_stream(s);
    }
  }
  reap_children();
  return exit_code_;
}

}  // namespace launcher
}  // namespace hora
