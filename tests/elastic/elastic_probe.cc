// elastic_probe: a worker of an elastic job (run by elastic_test_driver, or horarun's elastic
// mode) that checks hora::elastic's re-initialisation in place.
//
//   elastic_probe kill K   generations 0..K-1 each lose their last rank (it SIGKILLs itself
//                          before its third allreduce); the survivors see the failure as an
//                          error, reset and go on; then three resets without a failure. Every
//                          generation's allreduces are checked against its size.
//   elastic_probe stop     generation 0's last rank SIGSTOPs itself; the survivors fail after
//                          HORA_TIMEOUT_S and go on without it (the driver kills it).
//   elastic_probe hosts    every rank polls hora::elastic::hosts_updated() until the driver's
//                          flag is seen (by all at the same call), then resets with it; a
//                          process set made before the reset is gone after it and can be
//                          made again (needs HORA_DYNAMIC_PROCESS_SETS=1).
// At the end every survivor checks that it holds no more file descriptors and threads than
// before its first init (plus the elastic store connection) and no shared-memory mapping of
// any generation, and prints "elastic_probe: worker
// W done". Any failed check exits 1 with the reason.
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "hora/elastic.h"
#include "hora/hora.h"

namespace {

using Clock = std::chrono::steady_clock;

int count_entries(const char* dir) {
  int n = 0;
  if (DIR* d = opendir(dir)) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

// Shared-memory segments of the builtin backend still mapped ("/dev/shm/hora-...").
int mapped_segments() {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);)
    if (line.find("/dev/shm/hora-") != std::string::npos) ++n;
  return n;
}

std::string worker() {
  const char* id = std::getenv("HORA_ELASTIC_WORKER");
  return id ? id : "?";
}

[[noreturn]] void fail(const std::string& what) {
  std::printf("elastic_probe: worker %s FAIL: %s\n", worker().c_str(), what.c_str());
  std::fflush(stdout);
  hora::shutdown().IgnoreError();  // the failure above is what this process reports
  std::exit(1);
}

void check(const hora::Status& s, const std::string& what) {
  if (!s.ok()) fail(what + ": " + s.to_string());
}

// One allreduce of rank + 1: the sum is size * (size + 1) / 2, or an error (a peer failed).
hora::Status checked_allreduce(int index) {
  float value = static_cast<float>(hora::rank() + 1);
  auto view = hora::TensorView::flat(&value, hora::DataType::kFloat32, 1);
  if (!view.ok()) return view.status();
  HORA_RETURN_IF_ERROR(hora::allreduce("probe." + std::to_string(index), view.value(), view.value(),
                                       hora::ReduceOp::kSum));
  const int n = hora::size();
  const int expected = n * (n + 1) / 2;  // exact: one of n, n + 1 is even
  if (value != static_cast<float>(expected))
    fail("allreduce " + std::to_string(index) + " in generation " +
         std::to_string(hora::elastic::generation()) + " gave " + std::to_string(value));
  return hora::Status::OK();
}

// Runs `count` allreduces; rank size-1 raises `sig` before the third when `sig` is not 0.
hora::Status run_generation(int count, int sig) {
  for (int i = 0; i < count; ++i) {
    if (i == 2 && sig != 0 && hora::rank() == hora::size() - 1) raise(sig);
    HORA_RETURN_IF_ERROR(checked_allreduce(i));
  }
  return hora::Status::OK();
}

// After a failed generation: reset, and check the new generation is the next with one rank
// fewer.
void reset_after_failure(const hora::Status& failure) {
  const int64_t g = hora::elastic::generation();
  const int n = hora::size();
  const Clock::time_point start = Clock::now();
  std::printf("elastic_probe: worker %s rank %d of generation %lld failed: %s\n", worker().c_str(),
              hora::rank(), static_cast<long long>(g), failure.to_string().c_str());
  check(hora::elastic::reset(false, failure.to_string()), "reset after a failure");
  std::printf("elastic_probe: worker %s is rank %d of %d in generation %lld after %.1f s\n",
              worker().c_str(), hora::rank(), hora::size(),
              static_cast<long long>(hora::elastic::generation()),
              std::chrono::duration<double>(Clock::now() - start).count());
  std::fflush(stdout);
  if (hora::elastic::generation() != g + 1 || hora::size() != n - 1)
    fail("expected generation " + std::to_string(g + 1) + " of " + std::to_string(n - 1) +
         " ranks after the reset");
}

void run_kill(int failures) {
  for (int k = 0; k < failures; ++k) {
    const hora::Status s = run_generation(5, SIGKILL);
    if (s.ok()) fail("generation " + std::to_string(k) + " did not see its last rank die");
    reset_after_failure(s);
  }
  for (int k = 0; k < 3; ++k) {
    check(run_generation(3, 0), "a generation without failure");
    const int n = hora::size();
    check(hora::elastic::reset(false, "probe: reset without a failure"), "a voluntary reset");
    if (hora::size() != n) fail("the size changed at a reset without a failure");
  }
  check(run_generation(3, 0), "the last generation");
}

void run_stop() {
  const hora::Status s = run_generation(5, SIGSTOP);
  if (s.ok()) fail("generation 0 did not see its last rank stop");
  reset_after_failure(s);
  check(run_generation(3, 0), "the generation after the stopped rank");
}

// A process set of ranks {0, 1} (the job has dynamic sets: HORA_DYNAMIC_PROCESS_SETS=1) and an
// allreduce on it among its members.
void use_process_set(const std::string& when) {
  auto set = hora::add_process_set({0, 1});
  check(set.status(), "add_process_set " + when);
  if (hora::rank() > 1) return;
  float value = 1.0f;
  auto view = hora::TensorView::flat(&value, hora::DataType::kFloat32, 1);
  check(view.status(), "a view");
  hora::AllreduceOptions options;
  options.op = hora::ReduceOp::kSum;
  options.process_set = set.value().id();
  check(hora::allreduce("probe.set", view.value(), view.value(), options),
        "an allreduce on the process set " + when);
  if (value != 2.0f) fail("the process set's allreduce gave " + std::to_string(value));
}

void run_hosts() {
  use_process_set("in generation 0");
  const Clock::time_point start = Clock::now();
  for (int i = 0;; ++i) {
    check(checked_allreduce(i), "an allreduce before hosts_updated");
    auto updated = hora::elastic::hosts_updated();
    check(updated.status(), "hosts_updated");
    if (updated.value()) break;
    if (Clock::now() - start > std::chrono::seconds(60)) fail("hosts_updated never said true");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const int n = hora::size();
  check(hora::elastic::reset(true, "hosts updated"), "the reset for updated hosts");
  if (hora::elastic::generation() != 1 || hora::size() != n)
    fail("expected generation 1 of the same size after a hosts-updated reset");
  // Process sets do not survive a reset; registered again, they work.
  if (hora::process_sets().size() != 1) fail("a process set survived the reset");
  use_process_set("after the reset");
  auto again = hora::elastic::hosts_updated();
  check(again.status(), "hosts_updated in generation 1");
  if (again.value()) fail("hosts_updated is true again in generation 1");
  check(run_generation(3, 0), "the generation after hosts_updated");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (!hora::elastic::enabled()) fail("HORA_ELASTIC is not 1");
  if (hora::elastic::generation() != -1) fail("generation() is not -1 before init");
  const int fds_before = count_entries("/proc/self/fd");
  const int threads_before = count_entries("/proc/self/task");
  check(hora::init(), "init");
  if (mode == "kill") {
    run_kill(argc > 2 ? std::atoi(argv[2]) : 1);
  } else if (mode == "stop") {
    run_stop();
  } else if (mode == "hosts") {
    run_hosts();
  } else {
    fail("usage: elastic_probe kill K | stop | hosts");
  }
  check(hora::shutdown(), "shutdown");
  // One connection stays open after shutdown: the elastic membership's store client.
  const int fds_after = count_entries("/proc/self/fd");
  const int threads_after = count_entries("/proc/self/task");
  if (mapped_segments() != 0)
    fail(std::to_string(mapped_segments()) + " shared-memory mappings left after shutdown");
  if (fds_after > fds_before + 1 || threads_after > threads_before)
    fail("after shutdown " + std::to_string(fds_after) + " fds and " +
         std::to_string(threads_after) + " threads, before init " + std::to_string(fds_before) +
         " and " + std::to_string(threads_before));
  std::printf("elastic_probe: worker %s done (%d fds, %d threads as before init)\n",
              worker().c_str(), fds_after, threads_after);
  return 0;
}
