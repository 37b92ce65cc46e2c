// peer_kill_probe: one rank dies by SIGKILL in the middle of a large ring allreduce; every
// survivor must fail before its deadline with an error that names the dead rank.
//
// Run under `horarun --grace S -np N peer_kill_probe [stay]` (peer_kill_check.sh). The victim
// is rank N / 2; it raises SIGKILL on itself when it posts its 40th send or receive of the
// allreduce, through a Communicator wrapper, so the other ranks are mid-ring with segments in
// flight. Survivors ignore SIGTERM: horarun tears the job down as soon as the victim dies, and
// the point is what each survivor reports by itself (a launcher that does not tear down, e.g.
// torchrun or Slurm, leaves them running); --grace bounds that.
//
// A survivor leaves as soon as it failed, so most learn of the death through a neighbour that
// left. With `stay`, every survivor keeps its process and communicator until all survivors
// failed (through the store), so ranks whose neighbours are alive must find the dead rank
// themselves.
//
// Output (one line per survivor, stdout): "peer_kill_probe: rank R failed after T s: MESSAGE"
// and exit 3, or "peer_kill_probe: rank R finished without an error" and exit 0 (wrong).
// A backend this build lacks: "SKIPPED: ..." and exit 77 on every rank.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "collectives/algorithms/algorithms.h"
#include "collectives/backends/registry.h"
#include "collectives/communicator.h"
#include "core/context.h"
#include "core/context_access.h"
#include "hora/hora.h"

namespace {

using hora::Deadline;
using hora::Status;
using hora::StatusOr;
using hora::collectives::Communicator;
using hora::collectives::Request;

constexpr int kPostsBeforeDeath = 40;
constexpr double kDeadlineS = 30;
constexpr size_t kCount = size_t{4} << 20;  // 16 MiB of float32
constexpr size_t kSegmentBytes = 64 * 1024;

// Forwards to the job's communicator; on the victim, dies at the n-th posted operation.
class DyingCommunicator : public Communicator {
 public:
  DyingCommunicator(Communicator& inner, int posts_before_death)
      : inner_(inner), posts_left_(posts_before_death) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  const char* backend_name() const override { return inner_.backend_name(); }
  StatusOr<std::unique_ptr<Request>> isend(int peer, const void* data, size_t bytes,
                                           uint32_t tag) override {
    count_post();
    return inner_.isend(peer, data, bytes, tag);
  }
  StatusOr<std::unique_ptr<Request>> irecv(int peer, void* data, size_t bytes,
                                           uint32_t tag) override {
    count_post();
    return inner_.irecv(peer, data, bytes, tag);
  }
  void abort() override { inner_.abort(); }

 private:
  void count_post() {
    if (posts_left_ > 0 && --posts_left_ == 0) {
      std::fflush(nullptr);
      std::raise(SIGKILL);
    }
  }
  Communicator& inner_;
  int posts_left_;
};

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGTERM, SIG_IGN);
  const char* backend = std::getenv("HORA_BACKEND");
  if (backend != nullptr && std::string(backend) != "auto" &&
      !hora::collectives::backend_available(backend)) {
    std::printf("SKIPPED: backend '%s' is not built into this hora\n", backend);
    return 77;
  }
  Status status = hora::init();
  if (!status.ok()) {
    std::fprintf(stderr, "peer_kill_probe: hora::init failed: %s\n", status.to_string().c_str());
    return 1;
  }
  // This probe drives the job's communicator itself: park the engine first.
  status = hora::detail::pause_engine(std::chrono::seconds(60));
  if (!status.ok()) {
    std::fprintf(stderr, "peer_kill_probe: pausing the engine: %s\n", status.to_string().c_str());
    return 1;
  }
  Communicator& comm = hora::detail::context()->communicator();
  const int me = comm.rank();
  const int victim = comm.size() / 2;
  const bool stay = argc > 1 && std::string(argv[1]) == "stay";
  std::vector<float> in(kCount, 1.0f), out(kCount, 0.0f);
  hora::collectives::ScratchPool pool;
  hora::collectives::AlgorithmOptions options;
  options.scratch = &pool;
  options.segment_bytes = kSegmentBytes;
  // Warm-up: every rank is connected and past init before the victim dies.
  options.deadline = Deadline::after_seconds(kDeadlineS);
  status = hora::collectives::ring_allreduce(
      comm, in.data(), out.data(), 1024, hora::DataType::kFloat32, hora::ReduceOp::kSum, options);
  if (!status.ok()) {
    std::printf("peer_kill_probe: rank %d: warm-up failed: %s\n", me, status.to_string().c_str());
    return 1;
  }
  DyingCommunicator dying(comm, me == victim ? kPostsBeforeDeath : 0);
  const auto start = std::chrono::steady_clock::now();
  options.deadline = Deadline::after_seconds(kDeadlineS);
  status =
      hora::collectives::ring_allreduce(dying, in.data(), out.data(), kCount,
                                        hora::DataType::kFloat32, hora::ReduceOp::kSum, options);
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (status.ok()) {
    std::printf("peer_kill_probe: rank %d finished without an error\n", me);
    return 0;
  }
  std::printf("peer_kill_probe: rank %d failed after %.3f s: %s\n", me, elapsed,
              status.to_string().c_str());
  std::fflush(stdout);
  if (stay) {
    hora::collectives::Store& store = hora::detail::context()->store();
    const std::string prefix = "peer_kill_probe/failed/";
    std::vector<std::string> keys;
    for (int r = 0; r < comm.size(); ++r)
      if (r != victim) keys.push_back(prefix + std::to_string(r));
    Status st = store.set(prefix + std::to_string(me), hora::collectives::Bytes{1});
    if (st.ok()) st = store.wait(keys, Deadline::after_seconds(2 * kDeadlineS));
    if (!st.ok())
      std::printf("peer_kill_probe: rank %d: waiting for the other survivors: %s\n", me,
                  st.to_string().c_str());
  }
  comm.abort();
  // Leave at once: no shutdown handshake with a job that lost a rank.
  std::_Exit(3);
}
