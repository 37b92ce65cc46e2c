// elastic_test_driver: a minimal elastic driver for the runtime's tests, standing in for
// `horarun --min-np` (launcher/) so that the worker side is tested on its own. It plays the
// driver's part of collectives/rendezvous/elastic_protocol.h on one host:
//   - hosts the store (127.0.0.1, a fresh secret) and starts N workers (ids 0..N-1) with
//     HORA_ELASTIC=1, HORA_ELASTIC_WORKER, HORA_ELASTIC_TIMEOUT_S and the store's address;
//   - publishes generation 0 with every worker, in id order;
//   - when a worker of generation g posts its reset report or dies, waits until every worker of
//     g is accounted for (exited, or reported), then publishes g+1: the reporting workers in
//     their old rank order. A worker that a report names as failed, or that has not reported
//     --fallback-s after the first report of g, is SIGKILLed (+SIGCONT) and counted as failed
//     (a stopped worker);
//   - --hosts-updated-after S: S seconds after generation 0 is published, sets
//     hosts_updated_key(0) (no worker is added: the workers' reset brings the same ones back).
// Exits 0 when every worker that was never killed exited 0 and at least --min-survivors did,
// and prints "elastic_test_driver: generations N" and each worker's end. A job that has not
// ended within --deadline-s is killed and fails.
//
//   elastic_test_driver -np 3 [--fallback-s 10] [--deadline-s 90] [--min-survivors 1]
//                       [--hosts-updated-after S] -- PROGRAM ARGS...
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "collectives/rendezvous/elastic_protocol.h"
#include "collectives/rendezvous/tcp_store_client.h"
#include "collectives/rendezvous/tcp_store_server.h"
#include "core/base/host_identity.h"

namespace {

namespace ce = hora::collectives::elastic;
using Clock = std::chrono::steady_clock;

struct Options {
  int np = 0;
  double fallback_s = 10;
  double deadline_s = 90;
  int min_survivors = 1;
  double hosts_updated_after = -1;
  std::vector<char*> command;
};

struct Worker {
  int64_t id = 0;
  pid_t pid = -1;
  bool running = true;
  bool killed = false;  // by this driver (or by a signal): a failure, not an end
  int status = 0;
};

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "elastic_test_driver: %s\n", message.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  int i = 1;
  for (; i < argc && std::strcmp(argv[i], "--") != 0; i += 2) {
    if (i + 1 >= argc) die(std::string("missing value of ") + argv[i]);
    const std::string flag = argv[i];
    const double value = std::atof(argv[i + 1]);
    if (flag == "-np") {
      o.np = static_cast<int>(value);
    } else if (flag == "--fallback-s") {
      o.fallback_s = value;
    } else if (flag == "--deadline-s") {
      o.deadline_s = value;
    } else if (flag == "--min-survivors") {
      o.min_survivors = static_cast<int>(value);
    } else if (flag == "--hosts-updated-after") {
      o.hosts_updated_after = value;
    } else {
      die("unknown flag " + flag);
    }
  }
  for (++i; i < argc; ++i) o.command.push_back(argv[i]);
  o.command.push_back(nullptr);
  if (o.np < 1 || o.command.size() < 2) die("usage: -np N [flags] -- PROGRAM ARGS...");
  return o;
}

pid_t start_worker(const Options& o, int64_t id, int port, const std::string& secret) {
  const pid_t pid = fork();
  if (pid < 0) die("fork failed");
  if (pid > 0) return pid;
  for (const char* v : {"HORA_RANK", "HORA_SIZE", "HORA_LOCAL_RANK", "HORA_LOCAL_SIZE",
                        "HORA_CROSS_RANK", "HORA_CROSS_SIZE"})
    unsetenv(v);
  setenv("HORA_ELASTIC", "1", 1);
  setenv("HORA_ELASTIC_WORKER", std::to_string(id).c_str(), 1);
  if (getenv("HORA_ELASTIC_TIMEOUT_S") == nullptr) setenv("HORA_ELASTIC_TIMEOUT_S", "60", 1);
  setenv("HORA_HOSTNAME", "localhost", 1);
  setenv("HORA_RENDEZVOUS_ADDR", "127.0.0.1", 1);
  setenv("HORA_RENDEZVOUS_PORT", std::to_string(port).c_str(), 1);
  setenv("HORA_SECRET", secret.c_str(), 1);
  execvp(o.command[0], o.command.data());
  std::perror("execvp");
  _exit(127);
}

ce::Assignment assignment_of(int64_t generation, const std::vector<int64_t>& ids) {
  ce::Assignment a;
  a.generation = generation;
  const int size = static_cast<int>(ids.size());
  for (int r = 0; r < size; ++r) {
    ce::WorkerSlot slot;
    slot.worker_id = ids[static_cast<size_t>(r)];
    slot.rank = r;
    slot.local_rank = r;
    slot.local_size = size;
    slot.host = "localhost";
    a.workers.push_back(slot);
  }
  return a;
}

class Driver {
 public:
  Driver(const Options& o, hora::collectives::Store& store) : o_(o), store_(store) {}

  // Supervises until every worker ended; returns the exit code.
  int run(int port, const std::string& secret) {
    std::vector<int64_t> members;
    for (int64_t id = 0; id < o_.np; ++id) {
      workers_[id].id = id;
      workers_[id].pid = start_worker(o_, id, port, secret);
      members.push_back(id);
    }
    publish(members);
    const Clock::time_point start = Clock::now();
    while (any_running()) {
      if (seconds_since(start) > o_.deadline_s) {
        std::fprintf(stderr, "elastic_test_driver: FAIL: job still running after %.0f s\n",
                     o_.deadline_s);
        kill_all();
        return 1;
      }
      if (o_.hosts_updated_after >= 0 && !hosts_flag_set_ &&
          seconds_since(start) > o_.hosts_updated_after) {
        check(store_.set(ce::hosts_updated_key(0), {1}));
        hosts_flag_set_ = true;
      }
      reap();
      step_generation();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return summary();
  }

 private:
  static double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  }
  static void check(const hora::Status& s) {
    if (!s.ok()) die(s.to_string());
  }

  void publish(const std::vector<int64_t>& ids) {
    check(ce::publish_assignment(store_, assignment_of(generation_, ids)));
    members_ = ids;
    reported_.clear();
    first_report_.reset();
    std::printf("elastic_test_driver: generation %lld: %zu workers\n",
                static_cast<long long>(generation_), ids.size());
    std::fflush(stdout);
  }

  void reap() {
    int status = 0;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      for (auto& [id, w] : workers_) {
        if (w.pid != pid) continue;
        w.running = false;
        w.status = status;
        if (WIFSIGNALED(status)) w.killed = true;
        std::printf("elastic_test_driver: worker %lld (pid %d) %s %d\n", static_cast<long long>(id),
                    pid, WIFSIGNALED(status) ? "killed by signal" : "exited with",
                    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        std::fflush(stdout);
      }
    }
  }

  // Publishes g+1 once every worker of g is accounted for and one of them reported.
  void step_generation() {
    std::vector<int64_t> unaccounted;
    for (int64_t id : members_) {
      if (reported_.count(id) == 0) {
        auto posted = store_.check({ce::reset_key(generation_, id)});
        if (posted.ok() && posted.value()) {
          reported_[id] = true;
          if (!first_report_) first_report_ = Clock::now();
          kill_named(id);
        }
      }
      if (reported_.count(id) == 0 && workers_[id].running) unaccounted.push_back(id);
    }
    if (!first_report_) return;
    if (!unaccounted.empty()) {
      if (seconds_since(*first_report_) < o_.fallback_s) return;
      for (int64_t id : unaccounted) {
        std::printf("elastic_test_driver: worker %lld did not report within %.0f s: killed\n",
                    static_cast<long long>(id), o_.fallback_s);
        kill(workers_[id].pid, SIGKILL);
        kill(workers_[id].pid, SIGCONT);
        workers_[id].killed = true;
      }
    }
    std::vector<int64_t> next;
    for (int64_t id : members_)
      if (reported_.count(id) != 0 && !workers_[id].killed) next.push_back(id);
    ++generation_;
    publish(next);
  }

  // Kills the workers that `id`'s reset report names as failed (stopped ones, typically).
  void kill_named(int64_t id) {
    auto text = store_.get(ce::reset_key(generation_, id), hora::Deadline::after_seconds(5));
    if (!text.ok()) return;
    auto report = ce::parse_reset_report(text.value());
    if (!report.ok()) die(report.status().to_string());
    for (int rank : report.value().failed_ranks) {
      if (rank < 0 || rank >= static_cast<int>(members_.size())) continue;
      Worker& w = workers_[members_[static_cast<size_t>(rank)]];
      if (!w.running || w.killed) continue;
      std::printf(
          "elastic_test_driver: worker %lld (rank %d) named failed by worker %lld: killed\n",
          static_cast<long long>(w.id), rank, static_cast<long long>(id));
      kill(w.pid, SIGKILL);
      kill(w.pid, SIGCONT);
      w.killed = true;
    }
  }

  bool any_running() const {
    for (const auto& [id, w] : workers_)
      if (w.running) return true;
    return false;
  }

  void kill_all() {
    for (auto& [id, w] : workers_) {
      if (!w.running) continue;
      kill(w.pid, SIGKILL);
      kill(w.pid, SIGCONT);
      waitpid(w.pid, nullptr, 0);
    }
  }

  int summary() const {
    int survivors = 0;
    bool ok = true;
    for (const auto& [id, w] : workers_) {
      if (w.killed) continue;
      if (WIFEXITED(w.status) && WEXITSTATUS(w.status) == 0) {
        ++survivors;
      } else {
        ok = false;
      }
    }
    std::printf("elastic_test_driver: generations %lld, %d workers ended with 0\n",
                static_cast<long long>(generation_) + 1, survivors);
    return ok && survivors >= o_.min_survivors ? 0 : 1;
  }

  const Options& o_;
  hora::collectives::Store& store_;
  std::map<int64_t, Worker> workers_;
  int64_t generation_ = 0;
  std::vector<int64_t> members_;
  std::map<int64_t, bool> reported_;
  std::optional<Clock::time_point> first_report_;
  bool hosts_flag_set_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  const Options options = parse(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  auto secret = hora::generate_secret();
  if (!secret.ok()) die(secret.status().to_string());
  hora::collectives::TcpStoreServer::Options server_options;
  server_options.secret = secret.value();
  auto server = hora::collectives::TcpStoreServer::start(server_options);
  if (!server.ok()) die(server.status().to_string());
  const int port = server.value()->port();
  auto client = hora::collectives::TcpStoreClient::connect("127.0.0.1", port, secret.value(),
                                                           hora::Deadline::after_seconds(10));
  if (!client.ok()) die(client.status().to_string());
  Driver driver(options, *client.value());
  return driver.run(port, secret.value());
}
