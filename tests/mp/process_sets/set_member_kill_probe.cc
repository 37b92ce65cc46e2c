// set_member_kill_probe: a member of a process set dies; the set's other members must fail by
// themselves, naming the set, and the job's ranks outside the set must learn of it too.
//
// Run under `horarun --grace S -np 3 set_member_kill_probe` (set_member_kill_check.sh), with
// HORA_DYNAMIC_PROCESS_SETS=1. The set is {0, 2}; after a barrier of the whole job, rank 2
// raises SIGKILL on itself. Rank 0 runs allreduces on the set until one fails; rank 1 (outside
// the set) waits on a barrier of the whole job until it fails. Survivors ignore SIGTERM, as in
// peer_kill_probe.cc: what each reports by itself is the point.
//
// Output (stdout): "set_member_kill_probe: rank R failed after T s: MESSAGE" and exit 3 on each
// survivor, or "... finished without an error" and exit 0 (wrong).
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include "hora/hora.h"

int main() {
  std::signal(SIGTERM, SIG_IGN);
  hora::Status s = hora::init();
  if (!s.ok()) {
    std::printf("set_member_kill_probe: init failed: %s\n", s.to_string().c_str());
    return 1;
  }
  const int me = hora::rank();
  auto set = hora::add_process_set({0, 2});
  if (!set.ok()) {
    std::printf("set_member_kill_probe: add_process_set failed: %s\n",
                set.status().to_string().c_str());
    return 1;
  }
  s = hora::barrier();
  if (me == 2) std::raise(SIGKILL);
  const auto start = std::chrono::steady_clock::now();
  if (me == 0) {
    hora::AllreduceOptions options;
    options.process_set = set->id();
    for (int i = 0; s.ok() && i < 1000000; ++i) {
      std::vector<float> x(1024, 1.0f);
      auto view = hora::TensorView::flat(x.data(), hora::DataType::kFloat32, 1024).value();
      s = hora::allreduce("step", view, view, options);
    }
  } else {
    s = hora::barrier();
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (s.ok()) {
    std::printf("set_member_kill_probe: rank %d finished without an error\n", me);
    return 0;
  }
  std::printf("set_member_kill_probe: rank %d failed after %.1f s: %s\n", me, secs,
              s.to_string().c_str());
  std::fflush(stdout);
  hora::shutdown().IgnoreError();
  return 3;
}
