// A hora program for the engine's failure paths, each checked from outside by
// engine_check.sh (the job's exit code and output):
//   stall           after a barrier, rank 1 submits tensor 'late' 3 s after the others: with
//                   HORA_STALL_WARNING_S=1 rank 0 warns naming 'late' and rank 1 as missing,
//                   then the job completes.
//   stall_shutdown  rank 0 submits 'only.rank0', the others 'only.others': with
//                   HORA_STALL_SHUTDOWN_S=2 every rank's collective fails with the stall.
//   kill            the last rank kills itself (SIGKILL) while the others run allreduces:
//                   every survivor fails with an error naming the dead rank. Survivors ignore
//                   SIGTERM so that they report before the launcher tears them down.
//   timeline        named allreduces with HORA_TIMELINE set, one at a time and then a
//                   grouped (fused) step: rank 0 writes a Chrome trace that engine_check.sh
//                   parses.
//   timeline_kill   the same steps in a loop; rank 0, the trace's writer, kills itself
//                   (SIGKILL) after 1 s: the trace it leaves must still load as JSON.
// Prints "probe rank R: <status>" per rank and exits 0 when the rank saw what it should.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "hora/hora.h"

namespace {

int report(const hora::Status& s) {
  std::printf("probe rank %d: %s\n", hora::rank(), s.to_string().c_str());
  std::fflush(stdout);
  return 0;
}

hora::TensorView view(std::vector<float>& v) {
  return hora::TensorView::flat(v.data(), hora::DataType::kFloat32, static_cast<int64_t>(v.size()))
      .value();
}

int stall() {
  std::vector<float> x(16, 1.f);
  // Every rank's engine is running (a first collective), then rank 1 is late.
  if (!hora::barrier().ok()) return 1;
  if (hora::rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(3));
  hora::Status s = hora::allreduce("late", view(x), view(x), hora::ReduceOp::kSum);
  report(s);
  return s.ok() ? 0 : 1;
}

int stall_shutdown() {
  std::vector<float> x(16, 1.f);
  const char* name = hora::rank() == 0 ? "only.rank0" : "only.others";
  hora::Status s = hora::allreduce(name, view(x), view(x), hora::ReduceOp::kSum);
  report(s);
  return !s.ok() && s.message().find("stalled") != std::string::npos ? 0 : 1;
}

int kill_last() {
  const int victim = hora::size() - 1;
  std::vector<float> x(1 << 20, 1.f);
  if (hora::rank() != victim) std::signal(SIGTERM, SIG_IGN);
  for (int step = 0;; ++step) {
    if (hora::rank() == victim && step == 3) std::raise(SIGKILL);
    hora::Status s = hora::allreduce("step", view(x), view(x), hora::ReduceOp::kAverage);
    if (!s.ok()) {
      report(s);
      return s.message().find("rank " + std::to_string(victim)) != std::string::npos ? 0 : 1;
    }
  }
}

// One step: four gradients enqueued back to back (fused), then waited.
hora::Status fused_step(std::vector<std::vector<float>>& grads) {
  std::vector<hora::Handle> handles;
  for (size_t t = 0; t < grads.size(); ++t)
    handles.push_back(hora::allreduce_async("grad" + std::to_string(t), view(grads[t]),
                                            view(grads[t]), hora::ReduceOp::kAverage));
  for (hora::Handle& h : handles) {
    hora::Status s = h.wait();
    if (!s.ok()) return s;
  }
  return hora::Status::OK();
}

int timeline() {
  for (int step = 0; step < 3; ++step) {
    for (int t = 0; t < 4; ++t) {
      std::vector<float> x(1000, 1.f);
      hora::Status s = hora::allreduce("layer" + std::to_string(t) + ".weight", view(x), view(x),
                                       hora::ReduceOp::kAverage);
      if (!s.ok()) return report(s) + 1;
    }
  }
  // A grouped allreduce is fused as a unit, whatever the timing: one bucket of four.
  std::vector<std::vector<float>> grads(4, std::vector<float>(1000, 1.f));
  std::vector<std::string> names;
  std::vector<hora::TensorView> views;
  for (size_t t = 0; t < grads.size(); ++t) {
    names.push_back("grad" + std::to_string(t));
    views.push_back(view(grads[t]));
  }
  for (int step = 0; step < 3; ++step) {
    hora::Status s =
        hora::grouped_allreduce_async(names, views, views, hora::ReduceOp::kAverage).wait();
    if (!s.ok()) return report(s) + 1;
  }
  return report(hora::Status::OK());
}

int timeline_kill() {
  std::vector<std::vector<float>> grads(4, std::vector<float>(1000, 1.f));
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    if (hora::rank() == 0 && std::chrono::steady_clock::now() - start > std::chrono::seconds(1))
      std::raise(SIGKILL);
    hora::Status s = fused_step(grads);
    if (!s.ok()) {
      report(s);
      return 1;  // the survivors fail once rank 0 is gone: expected
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: engine_probe stall|stall_shutdown|kill|timeline|timeline_kill\n");
    return 2;
  }
  hora::Status s = hora::init();
  if (!s.ok()) {
    std::fprintf(stderr, "init: %s\n", s.to_string().c_str());
    return 1;
  }
  const std::string mode = argv[1];
  int rc = 2;
  if (mode == "stall") rc = stall();
  if (mode == "stall_shutdown") rc = stall_shutdown();
  if (mode == "kill") rc = kill_last();
  if (mode == "timeline") rc = timeline();
  if (mode == "timeline_kill") rc = timeline_kill();
  // The modes have checked what they expect; after a stall or a killed peer shutdown reports
  // the engine's fatal error again, which says nothing new here.
  hora::shutdown().IgnoreError();
  return rc;
}
