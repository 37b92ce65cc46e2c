// A worker of an elastic job for horarun's process tests: speaks the elastic protocol
// (collectives/rendezvous/elastic_protocol.h) through the store directly, with no hora
// runtime. In each generation it appends "worker=ID generation=G rank=R size=N pid=P" to LOG,
// marks itself ready (test/<g>/ready/<id> = its pid) and waits up to 2 s for every peer's mark.
// Then: size == TARGET -> exit 0. Otherwise it watches, for up to 8 s, for a peer that did not
// become ready or whose process ended (reported as failed ranks) or hosts_updated_key(g) set
// by the driver; it posts its reset report and waits for the next generation.
//
// usage: elastic_test_worker LOG TARGET [fail=ID:G] [stop=ID:G] [shm=ID:G] ...
//   fail=ID:G  worker ID exits 1 in generation G, before it marks itself ready
//   stop=ID:G  worker ID stops itself (SIGSTOP) there instead
//   shm=ID:G   worker ID creates /dev/shm/hora-<pid>-0-elastic-test there (never unlinked)
// Exits 3 when a wait of the protocol fails (the driver aborted, a timeout), printing why.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "collectives/rendezvous/elastic_protocol.h"
#include "collectives/rendezvous/tcp_store_client.h"

namespace el = hora::collectives::elastic;
using hora::Deadline;
using hora::collectives::Bytes;
using hora::collectives::Store;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool acts(const std::vector<std::string>& args, const std::string& what, int64_t id, int64_t g) {
  const std::string want = what + "=" + std::to_string(id) + ":" + std::to_string(g);
  for (const std::string& a : args)
    if (a == want) return true;
  return false;
}

int die(const std::string& why) {
  std::fprintf(stderr, "elastic_test_worker: %s\n", why.c_str());
  return 3;
}

std::string ready_key(int64_t g, int64_t id) {
  return "test/" + std::to_string(g) + "/ready/" + std::to_string(id);
}

// The reset report of a worker of `a` that is not ending: a peer that failed, or hosts
// updated; kTimeout after 8 s without either.
hora::StatusOr<el::ResetReport> watch(Store& store, const el::Assignment& a) {
  el::ResetReport report;
  std::vector<pid_t> pids;
  const Deadline ready_deadline = Deadline::after(std::chrono::seconds(2));
  for (const el::WorkerSlot& s : a.workers) {
    auto pid = store.get(ready_key(a.generation, s.worker_id), ready_deadline);
    if (!pid.ok()) {
      report.failed_ranks = {s.rank};
      report.reason = "rank " + std::to_string(s.rank) + " never became ready";
      return report;
    }
    pids.push_back(std::atoi(std::string(pid->begin(), pid->end()).c_str()));
  }
  const Deadline patience = Deadline::after(std::chrono::seconds(8));
  while (!patience.expired()) {
    for (size_t r = 0; r < pids.size(); ++r) {
      if (::kill(pids[r], 0) != 0 && errno == ESRCH) report.failed_ranks.push_back(int(r));
    }
    if (!report.failed_ranks.empty()) {
      report.reason = "a peer's process ended";
      return report;
    }
    auto updated = store.check({el::hosts_updated_key(a.generation)});
    if (!updated.ok()) return updated.status();
    if (*updated) {
      report.hosts_updated = true;
      report.reason = "hosts updated";
      return report;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return hora::Status::timeout("no failure and no hosts update in generation " +
                               std::to_string(a.generation));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return die("usage: elastic_test_worker LOG TARGET [fail=ID:G] [stop=ID:G]");
  const std::string log_path = argv[1];
  const int target = std::atoi(argv[2]);
  const std::vector<std::string> args(argv + 3, argv + argc);
  const int64_t id = std::atoll(env("HORA_ELASTIC_WORKER").c_str());
  if (env("HORA_ELASTIC") != "1" || !env("HORA_RANK").empty())
    return die("not started as an elastic worker");
  auto client = hora::collectives::TcpStoreClient::connect(
      env("HORA_RENDEZVOUS_ADDR"), std::atoi(env("HORA_RENDEZVOUS_PORT").c_str()),
      env("HORA_SECRET"), Deadline::after(std::chrono::seconds(10)));
  if (!client.ok()) return die(client.status().to_string());
  Store& store = *client.value();
  const double timeout_s = std::atof(env("HORA_ELASTIC_TIMEOUT_S").c_str());
  int64_t after = -1;
  for (;;) {
    auto a = el::wait_for_assignment(
        store, id, after,
        Deadline::after(std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000))));
    if (!a.ok()) return die(a.status().to_string());
    const int64_t g = a->generation;
    const el::WorkerSlot* me = a->find(id);
    {
      std::ofstream log(log_path, std::ios::app);
      log << "worker=" << id << " generation=" << g << " rank=" << me->rank << " size=" << a->size()
          << " pid=" << ::getpid() << "\n";
    }
    if (acts(args, "shm", id, g)) {
      const std::string name = "/hora-" + std::to_string(::getpid()) + "-0-elastic-test";
      const int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT, 0600);
      if (fd < 0) return die("shm_open " + name);
      ::close(fd);
    }
    if (acts(args, "fail", id, g)) return 1;
    if (acts(args, "stop", id, g)) ::raise(SIGSTOP);
    const std::string pid = std::to_string(::getpid());
    if (!store.set(ready_key(g, id), Bytes(pid.begin(), pid.end())).ok())
      return die("cannot mark ready");
    if (a->size() == target) {
      // Every peer ready too before leaving, so no peer takes this exit for a failure.
      for (const el::WorkerSlot& s : a->workers)
        if (!store.wait({ready_key(g, s.worker_id)}, Deadline::after(std::chrono::seconds(5))).ok())
          return die("a peer never became ready in the last generation");
      return 0;
    }
    auto report = watch(store, *a);
    if (!report.ok()) return die(report.status().to_string());
    if (!store.set(el::reset_key(g, id), el::format_reset_report(*report)).ok())
      return die("cannot post the reset report");
    after = g;
  }
}
