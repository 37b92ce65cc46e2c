#include "launcher/rank_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <sstream>

#include "launcher/user_error.h"

namespace hora {
namespace launcher {
namespace {

std::string format_seconds(double s) {
  std::ostringstream out;
  out << s;
  return out.str();
}

std::string env_key(const std::string& entry) { return entry.substr(0, entry.find('=')); }

void close_fd(int* fd) {
  if (*fd >= 0) ::close(*fd);
  *fd = -1;
}

// The descriptors spawn_rank opens for one rank, closed when it goes out of scope (those
// handed to the RankProcess are set to -1 first). [0] reads, [1] writes.
struct RankPipes {
  int out_pipe[2] = {-1, -1};   // the rank's stdout
  int err_pipe[2] = {-1, -1};   // the rank's stderr
  int exec_pipe[2] = {-1, -1};  // the child's errno when execve fails (closed on exec)
  int in_pipe[2] = {-1, -1};    // the rank's stdin when launch.stdin_data is set
  int stdin_fd = -1;            // the child's stdin: /dev/null or in_pipe[0]

  RankPipes() = default;
  RankPipes(const RankPipes&) = delete;
  RankPipes& operator=(const RankPipes&) = delete;
  ~RankPipes() {
    for (int* fd : {&out_pipe[0], &out_pipe[1], &err_pipe[0], &err_pipe[1], &exec_pipe[0],
                    &exec_pipe[1], &in_pipe[0], &in_pipe[1], &stdin_fd})
      close_fd(fd);
  }
};

Status open_pipes(const RankLaunch& launch, RankPipes& p) {
  if (::pipe2(p.out_pipe, O_CLOEXEC) != 0 || ::pipe2(p.err_pipe, O_CLOEXEC) != 0 ||
      ::pipe2(p.exec_pipe, O_CLOEXEC) != 0) {
    return Status::io(std::string("pipe2: ") + std::strerror(errno));
  }
  if (launch.stdin_data.empty()) {
    p.stdin_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  } else if (::pipe2(p.in_pipe, O_CLOEXEC) == 0) {
    p.stdin_fd = p.in_pipe[0];
    p.in_pipe[0] = -1;
  }
  if (p.stdin_fd < 0) return Status::io(std::string("stdin for the rank: ") + std::strerror(errno));
  return Status::OK();
}

// The child after fork: only async-signal-safe calls. Its own process group, killed with
// horarun, default signal dispositions, the pipes as fds 0-2, then execve; a failed execve
// writes its errno to exec_pipe.
[[noreturn]] void exec_rank(const RankLaunch& launch, const RankPipes& p, char* const* argv,
                            char* const* envp, pid_t parent) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // horarun died before prctl took effect
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGQUIT})
    ::sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::dup2(p.stdin_fd, 0);
  ::dup2(p.out_pipe[1], 1);
  ::dup2(p.err_pipe[1], 2);
  // Whatever else horarun has open (the store's sockets) must not leak into the rank.
  ::syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */);
  ::execve(launch.exe_path.c_str(), argv, envp);
  const int e = errno;
  ssize_t ignored = ::write(p.exec_pipe[1], &e, sizeof(e));
  (void)ignored;
  ::_exit(127);
}

// The parent after fork: waits until the child has exec'd (exec_pipe closes) or failed to
// (its errno arrives; the child is reaped).
Status await_exec(const RankLaunch& launch, RankPipes& p, pid_t pid) {
  close_fd(&p.out_pipe[1]);
  close_fd(&p.err_pipe[1]);
  close_fd(&p.exec_pipe[1]);
  close_fd(&p.stdin_fd);
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(p.exec_pipe[0], &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  if (n <= 0) return Status::OK();
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return Status::io("cannot execute '" + launch.exe_path + "': " + std::strerror(child_errno));
}

// The variables every process of the job gets alike: HORA_BACKEND, HORA_TIMELINE,
// HORA_START_TIMEOUT_S when horarun sets them.
void add_job_variables(const JobEnvironment& job, EnvVars& vars) {
  if (!job.backend.empty()) vars.emplace_back("HORA_BACKEND", job.backend);
  if (!job.timeline.empty()) vars.emplace_back("HORA_TIMELINE", job.timeline);
  if (job.start_timeout_s)
    vars.emplace_back("HORA_START_TIMEOUT_S", format_seconds(*job.start_timeout_s));
}

}  // namespace

EnvVars rank_environment(const RankPlacement& p, const JobEnvironment& job) {
  EnvVars vars = {
      {"HORA_RANK", std::to_string(p.rank)},
      {"HORA_SIZE", std::to_string(p.size)},
      {"HORA_LOCAL_RANK", std::to_string(p.local_rank)},
      {"HORA_LOCAL_SIZE", std::to_string(p.local_size)},
      {"HORA_CROSS_RANK", std::to_string(p.cross_rank)},
      {"HORA_CROSS_SIZE", std::to_string(p.cross_size)},
      {"HORA_HOSTNAME", p.host},
      {"HORA_RENDEZVOUS_ADDR", job.rendezvous_addr},
      {"HORA_RENDEZVOUS_PORT", std::to_string(job.rendezvous_port)},
      {"HORA_SECRET", job.secret},
  };
  // Horovod's names for the layout, which scripts written for horovodrun read.
  const size_t layout_count = 7;  // HORA_RANK .. HORA_HOSTNAME above
  for (size_t i = 0; i < layout_count; ++i)
    vars.emplace_back("HOROVOD_" + vars[i].first.substr(5), vars[i].second);
  add_job_variables(job, vars);
  return vars;
}

EnvVars elastic_worker_environment(int64_t worker_id, const std::string& host,
                                   const JobEnvironment& job, double elastic_timeout_s) {
  EnvVars vars = {
      {"HORA_ELASTIC", "1"},
      {"HORA_ELASTIC_WORKER", std::to_string(worker_id)},
      {"HORA_ELASTIC_TIMEOUT_S", format_seconds(elastic_timeout_s)},
      {"HORA_HOSTNAME", host},
      {"HORA_RENDEZVOUS_ADDR", job.rendezvous_addr},
      {"HORA_RENDEZVOUS_PORT", std::to_string(job.rendezvous_port)},
      {"HORA_SECRET", job.secret},
      {"HOROVOD_HOSTNAME", host},
  };
  add_job_variables(job, vars);
  return vars;
}

std::string shell_quote(const std::string& word) {
  if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789_-+=/.,:@%") == std::string::npos)
    return word;
  std::string out = "'";
  for (char c : word) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

StatusOr<std::vector<std::string>> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == quote)
        quote = 0;
      else if (c == '\\' && quote == '"' && i + 1 < text.size())
        cur += text[++i];
      else
        cur += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < text.size()) {
      cur += text[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(cur);
      cur.clear();
      in_word = false;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (quote) return Status::invalid_argument("unterminated quote in '" + text + "'");
  if (in_word) words.push_back(cur);
  if (words.empty()) return Status::invalid_argument("empty command '" + text + "'");
  return words;
}

StatusOr<std::string> find_executable(const std::string& name, const std::string& path_env) {
  auto check = [](const std::string& path) -> int {  // 0 ok, else errno-like reason
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return ENOENT;
    if (S_ISDIR(st.st_mode)) return EISDIR;
    // access() alone passes any file for root; an exec bit must be set too.
    if ((st.st_mode & 0111) == 0 || ::access(path.c_str(), X_OK) != 0) return EACCES;
    return 0;
  };
  if (name.empty()) return Status::invalid_argument("empty program name");
  if (name.find('/') != std::string::npos) {
    const int why = check(name);
    if (why == ENOENT) return Status::invalid_argument("program '" + name + "' does not exist");
    if (why == EISDIR) return Status::invalid_argument("program '" + name + "' is a directory");
    if (why == EACCES) return Status::invalid_argument("program '" + name + "' is not executable");
    return name;
  }
  std::stringstream dirs(path_env);
  std::string dir;
  int best_reason = ENOENT;
  while (std::getline(dirs, dir, ':')) {
    const std::string path = (dir.empty() ? std::string(".") : dir) + "/" + name;
    const int why = check(path);
    if (why == 0) return path;
    if (why == EACCES) best_reason = EACCES;
  }
  if (best_reason == EACCES)
    return Status::invalid_argument("program '" + name + "' found in PATH but not executable");
  return Status::invalid_argument("program '" + name + "' not found in PATH (" + path_env + ")");
}

RankLaunch local_launch(const std::string& exe_path, const std::vector<std::string>& command,
                        const std::vector<std::string>& base_env, const EnvVars& vars) {
  RankLaunch launch;
  launch.exe_path = exe_path;
  launch.argv = command;
  std::set<std::string> set_here;
  for (const auto& kv : vars) set_here.insert(kv.first);
  for (const std::string& entry : base_env)
    if (!set_here.count(env_key(entry))) launch.envp.push_back(entry);
  std::string shown;
  for (const auto& kv : vars) {
    launch.envp.push_back(kv.first + "=" + kv.second);
    if (kv.first != "HORA_SECRET") shown += kv.first + "=" + shell_quote(kv.second) + " ";
  }
  for (const std::string& word : command) shown += shell_quote(word) + " ";
  shown.pop_back();
  launch.display = shown;
  return launch;
}

RankLaunch remote_launch(const std::string& rsh_exe, const std::vector<std::string>& rsh_words,
                         const std::string& host, const std::string& cwd,
                         const std::vector<std::string>& command,
                         const std::vector<std::string>& base_env, const EnvVars& vars) {
  RankLaunch launch;
  launch.exe_path = rsh_exe;
  launch.argv = rsh_words;
  launch.argv.push_back(host);
  std::set<std::string> set_here;
  for (const auto& kv : vars) set_here.insert(kv.first);
  std::string script = "cd " + shell_quote(cwd) + " >/dev/null 2>&1; ";
  script += "read -r HORA_SECRET && export HORA_SECRET && exec env";
  for (const std::string& entry : base_env) {
    const std::string key = env_key(entry);
    if (key.rfind("HORA_", 0) == 0 && !set_here.count(key)) script += " " + shell_quote(entry);
  }
  for (const auto& kv : vars) {
    if (kv.first == "HORA_SECRET") {
      launch.stdin_data = kv.second + "\n";
      continue;
    }
    script += " " + shell_quote(kv.first + "=" + kv.second);
  }
  for (const std::string& word : command) script += " " + shell_quote(word);
  launch.argv.push_back(script);
  launch.envp = base_env;
  std::string shown;
  for (const std::string& word : launch.argv) shown += shell_quote(word) + " ";
  shown.pop_back();
  launch.display = shown;
  return launch;
}

StatusOr<RankProcess> spawn_rank(const RankLaunch& launch) {
  RankPipes pipes;
  HORARUN_RETURN_IF_ERROR(open_pipes(launch, pipes));
  // Everything the child touches is prepared here: after fork only async-signal-safe calls.
  std::vector<char*> argv, envp;
  for (const std::string& a : launch.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : launch.envp) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid < 0) return Status::io(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) exec_rank(launch, pipes, argv.data(), envp.data(), parent);
  // Parent. The group is set on both sides so killpg works even before the child runs.
  ::setpgid(pid, pid);
  HORARUN_RETURN_IF_ERROR(await_exec(launch, pipes, pid));
  if (pipes.in_pipe[1] >= 0) {
    // A few dozen bytes: fits the pipe buffer, so this never blocks. A rank that exited
    // already gives EPIPE (SIGPIPE is ignored in horarun), which is reported as its exit.
    ssize_t w = ::write(pipes.in_pipe[1], launch.stdin_data.data(), launch.stdin_data.size());
    (void)w;
  }
  RankProcess proc;
  proc.pid = pid;
  proc.stdout_fd = pipes.out_pipe[0];
  proc.stderr_fd = pipes.err_pipe[0];
  pipes.out_pipe[0] = pipes.err_pipe[0] = -1;
  return proc;
}

}  // namespace launcher
}  // namespace hora
