// What one rank is started with (its HORA_* environment, its command line, local or through
// --rsh) and spawning it as a child of horarun.
//
// A local rank is exec'd directly with horarun's environment plus its HORA_* variables. A
// remote rank is started as `RSH... host 'cd CWD; read -r HORA_SECRET && export HORA_SECRET &&
// exec env HORA_RANK=.. ... prog args'`: every word is shell-quoted (ssh hands the joined words
// to the remote login shell, which must be a POSIX shell), the HORA_* variables of horarun's own
// environment go along, and the job secret travels on the rsh's stdin, never on a command line
// that `ps` would show.
//
// Every rank runs in its own process group (so teardown reaches its children too), with
// PR_SET_PDEATHSIG=SIGKILL (a SIGKILLed horarun takes its direct children along), default
// signal dispositions, an empty signal mask, stdin from /dev/null (or the secret pipe), and
// stdout/stderr on pipes that the supervisor reads. Pure functions are thread-safe;
// spawn_rank forks and must be called from the supervising thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hora/status.h"
#include "launcher/host_list.h"

namespace hora {
namespace launcher {

using EnvVars = std::vector<std::pair<std::string, std::string>>;

struct JobEnvironment {
  std::string rendezvous_addr;
  int rendezvous_port = 0;
  std::string secret;
  std::string backend;   // empty: HORA_BACKEND not set by horarun
  std::string timeline;  // empty: HORA_TIMELINE not set
  std::optional<double> start_timeout_s;
};

// The HORA_* variables horarun sets for one rank, HORA_RANK first.
EnvVars rank_environment(const RankPlacement& placement, const JobEnvironment& job);

// The variables of one worker of an elastic job (collectives/rendezvous/elastic_protocol.h):
// HORA_ELASTIC=1, HORA_ELASTIC_WORKER, HORA_ELASTIC_TIMEOUT_S, HORA_HOSTNAME, the store's
// address and secret, and the job's variables as above; no rank or size (the worker reads its
// slot from the store).
EnvVars elastic_worker_environment(int64_t worker_id, const std::string& host,
                                   const JobEnvironment& job, double elastic_timeout_s);

// "abc" stays abc when it is made only of safe characters; anything else becomes 'a'\''b'.
std::string shell_quote(const std::string& word);
// Splits an --rsh command into words: blanks separate, '...' and "..." group, \ escapes.
StatusOr<std::vector<std::string>> split_words(const std::string& text);

// The path that execve should run for `name`: itself when it contains '/', else the first
// match in the ':'-separated `path_env`. Fails (kInvalidArgument) when it does not exist, is
// a directory or is not executable; the message names the program and PATH.
StatusOr<std::string> find_executable(const std::string& name, const std::string& path_env);

struct RankLaunch {
  std::string exe_path;           // what execve runs
  std::vector<std::string> argv;  // argv[0] included
  std::vector<std::string> envp;  // "K=V", the complete environment
  std::string stdin_data;         // written to the rank's stdin, then EOF; empty: /dev/null
  std::string display;            // the command for --verbose, the secret left out
};

// The launch of a local rank: `command` run with `base_env` (usually environ) plus `vars`
// (which override what base_env has). REQUIRES: exe_path found by find_executable.
RankLaunch local_launch(const std::string& exe_path, const std::vector<std::string>& command,
                        const std::vector<std::string>& base_env, const EnvVars& vars);
// The launch of a rank on `host` through `rsh_words` (exe resolved: rsh_exe). HORA_SECRET in
// `vars` goes through stdin; the HORA_* entries of `base_env` that `vars` does not set are
// passed along on the command line; the remote shell first cd's to `cwd` when it exists.
RankLaunch remote_launch(const std::string& rsh_exe, const std::vector<std::string>& rsh_words,
                         const std::string& host, const std::string& cwd,
                         const std::vector<std::string>& command,
                         const std::vector<std::string>& base_env, const EnvVars& vars);

struct RankProcess {
  pid_t pid = -1;  // also the process group id
  int stdout_fd = -1;
  int stderr_fd = -1;
};

// Forks and execs `launch`. Returns once the exec succeeded (a CLOEXEC pipe reports an exec
// failure, which is returned as kIo naming the program, and the child is reaped). The caller
// owns the fds and must reap the pid. REQUIRES: SIGCHLD blocked or handled by the caller.
StatusOr<RankProcess> spawn_rank(const RankLaunch& launch);

}  // namespace launcher
}  // namespace hora
