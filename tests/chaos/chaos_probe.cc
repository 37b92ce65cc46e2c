// chaos_probe: a hora program that runs one collective in a loop through the public API, for
// the chaos drivers (tests/chaos/*.sh) to break from outside or from inside.
//
// Usage: chaos_probe COLLECTIVE [--bytes B] [--steps N] [--victim R --fault F
//                                [--after K] [--sleep-ms MS]]
//   COLLECTIVE  allreduce | broadcast | allgather: one tensor of B bytes per step (a cached
//               name, so steps after the first agree through the response cache);
//               negotiation: a fresh 4-byte allreduce name every step, so every round goes
//               through the coordinator and the time is spent negotiating, not moving bytes.
//   --steps N   steps after the warm-up (0: until a failure).
//   --pace-ms P sleep P ms before each step (a job that lasts a known time).
//   --in-set 1  allreduce only: the collective runs in process set 1 (ranks 0 .. size-2, given
//               to init), by that set's own engine and communicator; the last rank, not a
//               member, waits until this process knows a rank failed (hora::detail::
//               failed_ranks(): its own engine's idle round found it, or the members posted it
//               to the store) and then reports that failure like the others (60 s at most).
//   Faults the victim rank R does to itself:
//     exit0      after step K: std::exit(0) without hora::shutdown (a rank that leaves early).
//     shutdown0  after step K: hora::shutdown(), then exit 0.
//     slow       in step K, between its two halves: sleeps MS (must not be taken for dead).
//     late       before its first collective: sleeps MS (loading data; must not be taken for
//                dead either, however long).
//     hang_first before its first collective: sleeps forever (the driver stops or kills it
//                there, while the others wait in their first collective).
//   Faults from outside (kill -9, SIGSTOP, a corrupting LD_PRELOAD) need no flag.
//
// Every rank prints (stdout, flushed):
//   "chaos_probe: rank R pid P started"            after init
//   "chaos_probe: rank R ready"                    after the warm-up step
//   "chaos_probe: rank R leaves with exit 0 at E after step S"   the exit0/shutdown0 victim
//   "chaos_probe: rank R done after N steps"       and exits 0
//   "chaos_probe: rank R failed at E after step S: MESSAGE"   E = wall-clock seconds, for
//                                                  the driver to compare with its kill time
//   "chaos_probe: rank R shutdown after failure took X s: STATUS"  then exits 3
// Survivors ignore SIGTERM: a launcher that tears the job down once one rank failed would
// otherwise hide what the others report by themselves (horarun --grace bounds that).
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/failed_ranks_access.h"
#include "hora/hora.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string collective;
  size_t bytes = size_t{4} << 20;
  long steps = 0;
  int victim = -1;
  std::string fault;
  long after = 2;
  long sleep_ms = 0;
  long pace_ms = 0;
  bool in_set = false;
};

bool parse(int argc, char** argv, Args* a) {
  if (argc < 2) return false;
  a->collective = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const char* v = argv[i + 1];
    if (flag == "--bytes")
      a->bytes = std::strtoull(v, nullptr, 10);
    else if (flag == "--steps")
      a->steps = std::strtol(v, nullptr, 10);
    else if (flag == "--victim")
      a->victim = std::atoi(v);
    else if (flag == "--fault")
      a->fault = v;
    else if (flag == "--after")
      a->after = std::strtol(v, nullptr, 10);
    else if (flag == "--sleep-ms")
      a->sleep_ms = std::strtol(v, nullptr, 10);
    else if (flag == "--pace-ms")
      a->pace_ms = std::strtol(v, nullptr, 10);
    else if (flag == "--in-set")
      a->in_set = std::atoi(v) != 0;
    else
      return false;
  }
  if (a->in_set) return a->collective == "allreduce";
  return a->collective == "allreduce" || a->collective == "broadcast" ||
         a->collective == "allgather" || a->collective == "negotiation";
}

double wall_seconds() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Now, as "1796289067.013": for the driver to compare with the times of other events.
std::string wall_text() {
  char text[64];
  std::snprintf(text, sizeof text, "%.3f", wall_seconds());
  return text;
}

void say(const std::string& line) {
  std::printf("chaos_probe: rank %d %s\n", hora::rank(), line.c_str());
  std::fflush(stdout);
}

hora::TensorView view(std::vector<float>& v) {
  return hora::TensorView::flat(v.data(), hora::DataType::kFloat32, static_cast<int64_t>(v.size()))
      .value();
}

// One collective of the step; `part` tells the two halves of a step apart.
hora::Status run_one(const Args& a, long step, int part, std::vector<float>& buf) {
  const int me = hora::rank(), n = hora::size();
  const std::string suffix = part == 0 ? "" : ".b";
  if (a.collective == "allreduce") {
    std::fill(buf.begin(), buf.end(), static_cast<float>(me + 1));
    hora::AllreduceOptions options;
    options.op = hora::ReduceOp::kSum;
    options.process_set = a.in_set ? 1 : hora::kGlobalProcessSet;
    hora::Status s = hora::allreduce("chaos.allreduce" + suffix, view(buf), view(buf), options);
    const int members = a.in_set ? n - 1 : n;  // the set's ranks are 0 .. members-1
    const float want = static_cast<float>(members * (members + 1) / 2);
    if (s.ok() && (buf.front() != want || buf.back() != want))
      return hora::Status::internal("allreduce result " + std::to_string(buf.front()) +
                                    ", expected " + std::to_string(want));
    return s;
  }
  if (a.collective == "broadcast") {
    std::fill(buf.begin(), buf.end(), static_cast<float>(me));
    hora::Status s = hora::broadcast("chaos.broadcast" + suffix, view(buf), 0);
    if (s.ok() && (buf.front() != 0.0f || buf.back() != 0.0f))
      return hora::Status::internal("broadcast result is not root 0's");
    return s;
  }
  if (a.collective == "allgather") {
    std::fill(buf.begin(), buf.end(), static_cast<float>(me));
    auto r = hora::allgather("chaos.allgather" + suffix, view(buf));
    if (!r.ok()) return r.status();
    if (r.value().data.size() != buf.size() * sizeof(float) * static_cast<size_t>(n))
      return hora::Status::internal("allgather returned " + std::to_string(r.value().data.size()) +
                                    " bytes");
    return hora::Status::OK();
  }
  // negotiation: a name never seen before, so the coordinator decides every step.
  std::vector<float> one(1, 1.0f);
  return hora::allreduce("chaos.negotiation." + std::to_string(step) + suffix, view(one), view(one),
                         hora::ReduceOp::kSum);
}

int fail(long step, const hora::Status& s) {
  say("failed at " + wall_text() + " after step " + std::to_string(step) + ": " + s.to_string());
  const Clock::time_point t0 = Clock::now();
  hora::Status down = hora::shutdown();
  char took[32];
  std::snprintf(took, sizeof took, "%.3f",
                std::chrono::duration<double>(Clock::now() - t0).count());
  std::printf("chaos_probe: shutdown after failure took %s s: %s\n", took,
              down.to_string().c_str());
  std::fflush(stdout);
  return 3;
}

// The non-member of --in-set: ready at once, then waits until this process knows a rank
// failed, and reports that failure as a member would report its own.
int wait_for_failure() {
  say("ready");
  const Clock::time_point until = Clock::now() + std::chrono::seconds(60);
  while (hora::detail::failed_ranks().empty()) {
    if (Clock::now() >= until) {
      say("saw no failure within 60 s");
      hora::shutdown().IgnoreError();
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return fail(0, hora::detail::failure_status());
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, &a)) {
    std::fprintf(stderr,
                 "usage: chaos_probe allreduce|broadcast|allgather|negotiation [--bytes B] "
                 "[--steps N] [--pace-ms P] [--in-set 1] [--victim R --fault "
                 "exit0|shutdown0|slow|late|hang_first "
                 "[--after K] [--sleep-ms MS]]\n");
    return 2;
  }
  std::signal(SIGTERM, SIG_IGN);
  hora::InitOptions init_options;
  if (a.in_set) {
    const char* size_text = std::getenv("HORA_SIZE");
    const int size = size_text != nullptr ? std::atoi(size_text) : 0;
    if (size < 3) {
      std::fprintf(stderr, "chaos_probe: --in-set needs at least 3 ranks (HORA_SIZE)\n");
      return 2;
    }
    init_options.process_sets.push_back({});
    for (int r = 0; r + 1 < size; ++r) init_options.process_sets.back().push_back(r);
  }
  hora::Status s = hora::init(init_options);
  if (!s.ok()) {
    std::printf("chaos_probe: init failed: %s\n", s.to_string().c_str());
    return 1;
  }
  const bool is_victim = hora::rank() == a.victim;
  say("pid " + std::to_string(static_cast<int>(getpid())) + " started");
  if (is_victim && a.fault == "hang_first") {
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  if (is_victim && a.fault == "late")
    std::this_thread::sleep_for(std::chrono::milliseconds(a.sleep_ms));
  if (a.in_set && hora::rank() == hora::size() - 1) return wait_for_failure();
  std::vector<float> buf(std::max<size_t>(1, a.bytes / sizeof(float)));
  s = run_one(a, 0, 0, buf);
  if (!s.ok()) return fail(0, s);
  say("ready");
  for (long step = 1; a.steps == 0 || step <= a.steps; ++step) {
    if (a.pace_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(a.pace_ms));
    s = run_one(a, step, 0, buf);
    if (!s.ok()) return fail(step, s);
    if (is_victim && a.fault == "slow" && step == a.after)
      std::this_thread::sleep_for(std::chrono::milliseconds(a.sleep_ms));
    if (a.fault == "slow") {
      s = run_one(a, step, 1, buf);
      if (!s.ok()) return fail(step, s);
    }
    if (is_victim && step == a.after && a.fault == "exit0") {
      say("leaves with exit 0 at " + wall_text() + " after step " + std::to_string(step));
      std::exit(0);
    }
    if (is_victim && step == a.after && a.fault == "shutdown0") {
      say("leaves with exit 0 at " + wall_text() + " after step " + std::to_string(step) +
          " (shutting down)");
      // The fault is leaving cleanly; what shutdown reports is the survivors' to check.
      hora::shutdown().IgnoreError();
      std::exit(0);
    }
  }
  say("done after " + std::to_string(a.steps) + " steps");
  s = hora::shutdown();
  if (!s.ok()) {
    say("shutdown failed: " + s.to_string());
    return 1;
  }
  return 0;
}
