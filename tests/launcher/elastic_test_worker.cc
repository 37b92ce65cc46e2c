// A worker of an elastic job for horarun's process tests: speaks the elastic protocol
// (collectives/rendezvous/elastic_protocol.h) through the store directly, with no hora
// runtime. In each generation it appends "worker=ID generation=G rank=R size=N" to LOG, marks
// itself ready (test/<g>/ready/<id>) and waits up to 2 s for every peer's mark: a peer missing
// is reported as failed (reset_key with its rank) and the worker waits for the next
// generation. Otherwise it waits (up to 8 s) until the size reaches TARGET, resetting when the
// driver sets hosts_updated_key(g), and then exits 0.
//
// usage: elastic_test_worker LOG TARGET [fail=ID:G] [stop=ID:G] ...
//   fail=ID:G  worker ID exits 1 in generation G, before it marks itself ready
//   stop=ID:G  worker ID stops itself (SIGSTOP) there instead
// Exits 3 when a wait of the protocol fails (the driver aborted, a timeout), printing why.
#include <signal.h>
#include <unistd.h>

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

// The rank of the first peer of `a` whose ready mark did not come within 2 s, or -1.
int missing_peer(Store& store, const el::Assignment& a) {
  const Deadline deadline = Deadline::after(std::chrono::seconds(2));
  for (const el::WorkerSlot& s : a.workers) {
    if (!store.wait({ready_key(a.generation, s.worker_id)}, deadline).ok()) return s.rank;
  }
  return -1;
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
    if (acts(args, "fail", id, g)) return 1;
    if (acts(args, "stop", id, g)) ::raise(SIGSTOP);
    if (!store.set(ready_key(g, id), {'1'}).ok()) return die("cannot mark ready");
    el::ResetReport report;
    const int missing = missing_peer(store, *a);
    if (missing >= 0) {
      report.failed_ranks = {missing};
      report.reason = "rank " + std::to_string(missing) + " never became ready";
    } else {
      const Deadline patience = Deadline::after(std::chrono::seconds(8));
      while (a->size() < target && !patience.expired()) {
        auto updated = store.check({el::hosts_updated_key(g)});
        if (!updated.ok()) return die(updated.status().to_string());
        if (*updated) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      if (a->size() >= target) return 0;
      report.hosts_updated = true;
      report.reason = "hosts updated";
    }
    if (!store.set(el::reset_key(g, id), el::format_reset_report(report)).ok())
      return die("cannot post the reset report");
    after = g;
  }
}
