#include "collectives/backends/nccl/nccl_poll.h"

#include <algorithm>
#include <thread>

#include "collectives/backends/nccl/nccl_status.h"

namespace hora {
namespace collectives {
namespace nccl_backend {

Status poll_until(const PollTarget& target, const std::function<StatusOr<bool>()>& done,
                  Deadline deadline, const std::string& what) {
  using Clock = Deadline::Clock;
  const Clock::time_point start = Clock::now();
  Clock::time_point next_peer_check = start + kDeadPeerCheckPeriod;
  std::chrono::microseconds sleep(0);
  for (;;) {
    if (target.aborted != nullptr && target.aborted->load(std::memory_order_acquire))
      return Status::remote("nccl: " + what + ": aborted");
    if (target.comm != nullptr) {
      ncclResult_t async = ncclSuccess;
      ncclResult_t result = target.api->comm_get_async_error(target.comm, &async);
      if (result == ncclSuccess && async != ncclSuccess && async != ncclInProgress) result = async;
      if (result != ncclSuccess)
        return nccl_status(result, "nccl: " + what, target.api->get_last_error(target.comm));
    }
    StatusOr<bool> finished = done();
    if (!finished.ok()) return finished.status();
    if (finished.value()) return Status::OK();
    const Clock::time_point now = Clock::now();
    if (now >= deadline.at()) {
      const auto waited =
          std::chrono::duration_cast<std::chrono::milliseconds>(now - start).count();
      return Status::timeout("nccl: " + what + ": not finished after " + std::to_string(waited) +
                             " ms (the deadline; HORA_TIMEOUT_S)");
    }
    if (target.dead_peer && now >= next_peer_check) {
      next_peer_check = now + kDeadPeerCheckPeriod;
      const std::string dead = target.dead_peer();
      if (!dead.empty()) return Status::remote("nccl: " + what + ": " + dead);
    }
    if (now - start < std::chrono::microseconds(50)) {
      std::this_thread::yield();
      continue;
    }
    sleep = std::min(std::chrono::microseconds(1000),
                     std::max(std::chrono::microseconds(10), sleep * 2));
    std::this_thread::sleep_for(std::min<Clock::duration>(sleep, deadline.at() - now));
  }
}

}  // namespace nccl_backend
}  // namespace collectives
}  // namespace hora
