#include "launcher/discovery.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <set>
#include <sstream>

#include "launcher/rank_process.h"

namespace hora {
namespace launcher {
namespace {

constexpr const char* kExitMarker = "hora-discovery-exit=";

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// One "host[:slots]" line, or none when it is malformed.
std::optional<HostSlots> parse_line(const std::string& line) {
  if (line.find_first_of(" \t=") != std::string::npos) return std::nullopt;
  const size_t colon = line.rfind(':');
  HostSlots hs{line, 1};
  if (colon != std::string::npos) {
    hs.host = line.substr(0, colon);
    const std::string slots = line.substr(colon + 1);
    char* end = nullptr;
    errno = 0;
    const long n = std::strtol(slots.c_str(), &end, 10);
    if (slots.empty() || *end != '\0' || errno == ERANGE || n < 1 || n > 1000000)
      return std::nullopt;
    hs.slots = static_cast<int>(n);
  }
  if (hs.host.empty()) return std::nullopt;
  return hs;
}

// Reads what `fd` has now into `into`; false at EOF or on an error (the fd is closed).
bool drain(int* fd, std::string* into) {
  char buf[4096];
  while (*fd >= 0) {
    const ssize_t n = ::read(*fd, buf, sizeof(buf));
    if (n > 0) {
      into->append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    ::close(*fd);
    *fd = -1;
  }
  return false;
}

}  // namespace

DiscoveryResult parse_discovery_output(const std::string& text) {
  DiscoveryResult result;
  result.ok = true;
  std::istringstream lines(text);
  std::string raw;
  std::set<std::string> seen;
  int number = 0;
  while (std::getline(lines, raw)) {
    ++number;
    const std::string line = trim(raw);
    if (line.empty() || line[0] == '#') continue;
    const std::optional<HostSlots> hs = parse_line(line);
    const std::string where = "line " + std::to_string(number) + " '" + line + "'";
    if (!hs) {
      result.warnings.push_back(where + ": expected host:slots (slots a positive integer)");
    } else if (!seen.insert(hs->host).second) {
      result.warnings.push_back(where + ": host " + hs->host + " listed twice, first kept");
    } else {
      result.hosts.push_back(*hs);
    }
  }
  return result;
}

DiscoveryScript::DiscoveryScript(std::string command, std::vector<std::string> env,
                                 double run_limit_s)
    : command_(std::move(command)), env_(std::move(env)), run_limit_s_(run_limit_s) {}

DiscoveryScript::~DiscoveryScript() { stop(); }

void DiscoveryScript::stop() {
  if (pid_ > 0) ::killpg(pid_, SIGKILL);
  pid_ = -1;
  for (int* fd : {&out_fd_, &err_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

std::optional<DiscoveryResult> DiscoveryScript::poll(double now_s) {
  if (pid_ < 0) {
    if (now_s < started_s_ + kDiscoveryIntervalS) return std::nullopt;
    RankLaunch launch;
    launch.exe_path = "/bin/sh";
    launch.argv = {"sh", "-c", "(" + command_ + "\n)\necho \"" + kExitMarker + "$?\" >&2",
                   "discovery"};
    launch.envp = env_;
    started_s_ = now_s;
    out_.clear();
    err_.clear();
    auto proc = spawn_rank(launch);
    if (!proc.ok()) {
      DiscoveryResult failed;
      failed.error = proc.status().message();
      return failed;
    }
    pid_ = proc.value().pid;
    out_fd_ = proc.value().stdout_fd;
    err_fd_ = proc.value().stderr_fd;
    for (int fd : {out_fd_, err_fd_}) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  const bool out_open = drain(&out_fd_, &out_);
  const bool err_open = drain(&err_fd_, &err_);
  if (!out_open && !err_open) return finish(now_s);
  if (now_s >= started_s_ + run_limit_s_) {
    stop();
    DiscoveryResult failed;
    std::ostringstream limit;
    limit << run_limit_s_;
    failed.error = "still running after " + limit.str() + " s (killed)";
    return failed;
  }
  return std::nullopt;
}

std::optional<DiscoveryResult> DiscoveryScript::finish(double now_s) {
  (void)now_s;
  pid_ = -1;  // reaped by whoever reaps horarun's children
  std::vector<std::string> stderr_lines;
  std::istringstream lines(err_);
  std::string line;
  std::string status = "no exit status (the shell was killed)";
  bool exited_zero = false;
  while (std::getline(lines, line)) {
    if (line.rfind(kExitMarker, 0) == 0) {
      const std::string code = line.substr(std::string(kExitMarker).size());
      exited_zero = code == "0";
      status = "exit code " + code;
    } else if (!trim(line).empty()) {
      stderr_lines.push_back("stderr: " + line);
    }
  }
  DiscoveryResult result;
  if (exited_zero) {
    result = parse_discovery_output(out_);
  } else {
    result.error = "failed (" + status + ")";
  }
  result.warnings.insert(result.warnings.begin(), stderr_lines.begin(), stderr_lines.end());
  return result;
}

}  // namespace launcher
}  // namespace hora
