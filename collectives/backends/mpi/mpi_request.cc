#include "collectives/backends/mpi/mpi_request.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "collectives/backends/mpi/mpi_status.h"
#include "collectives/failed_ranks.h"
#include "hora/logging.h"

namespace hora {
namespace collectives {
namespace mpi_backend {
namespace {

constexpr auto kSpinTime = std::chrono::microseconds(50);
constexpr auto kFirstSleep = std::chrono::microseconds(10);
constexpr auto kMaxSleep = std::chrono::microseconds(1000);
constexpr auto kCheckEvery = std::chrono::milliseconds(100);  // known failures (failed_ranks.h)

}  // namespace

Status poll_request(MPI_Request* request, MPI_Status* status, Deadline deadline,
                    const std::atomic<bool>& aborted, const std::function<std::string()>& describe,
                    const std::function<Status(Deadline::Clock::duration)>& known_failure) {
  const auto started = Deadline::Clock::now();
  const auto spin_until = started + kSpinTime;
  auto next_check = started + kCheckEvery;
  auto sleep = kFirstSleep;
  while (true) {
    int flag = 0;
    int rc = MPI_Test(request, &flag, status);
    if (rc != MPI_SUCCESS) {
      *request = MPI_REQUEST_NULL;  // an errored request is completed (and freed) by MPI_Test
      return mpi_status(rc, describe());
    }
    if (flag) return Status::OK();
    if (aborted.load(std::memory_order_acquire))
      return Status::remote("mpi: " + describe() + ": aborted");
    auto now = Deadline::Clock::now();
    if (now >= deadline.at()) return Status::timeout("mpi: " + describe() + ": deadline passed");
    if (known_failure && now >= next_check) {
      next_check = now + kCheckEvery;
      Status known = known_failure(now - started);
      if (!known.ok()) return known.with_context(" (mpi: " + describe() + ")");
    }
    if (now < spin_until) continue;
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline.at() - now);
    std::this_thread::sleep_for(std::max(std::chrono::microseconds(1), std::min(sleep, left)));
    sleep = std::min(sleep * 2, kMaxSleep);
  }
}

void abandon_p2p_request(MPI_Request* request, bool is_recv) {
  if (*request == MPI_REQUEST_NULL) return;
  if (is_recv) {
    MPI_Cancel(request);
    MPI_Status status;
    MPI_Wait(request, &status);  // local after MPI_Cancel (MPI standard, section 3.8.4)
  } else {
    MPI_Request_free(request);
  }
  *request = MPI_REQUEST_NULL;
}

MpiRequest::MpiRequest(MPI_Request request, MPI_Datatype owned_type, bool is_recv, int rank,
                       int peer, int global_peer, uint32_t tag, size_t bytes,
                       const std::atomic<bool>* aborted)
    : request_(request),
      owned_type_(owned_type),
      is_recv_(is_recv),
      rank_(rank),
      peer_(peer),
      global_peer_(global_peer),
      tag_(tag),
      bytes_(bytes),
      aborted_(aborted) {}

MpiRequest::~MpiRequest() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  abandon_p2p_request(&request_, is_recv_);
  release_type();
}

void MpiRequest::release_type() {
  if (owned_type_ != MPI_DATATYPE_NULL) MPI_Type_free(&owned_type_);
}

std::string MpiRequest::describe() const {
  return "rank " + std::to_string(rank_) + ": " + (is_recv_ ? "recv from" : "send to") + " rank " +
         std::to_string(peer_) + " (tag " + std::to_string(tag_) + ", " + std::to_string(bytes_) +
         " bytes)";
}

Status MpiRequest::check_received(const MPI_Status& status) const {
  MPI_Count got = 0;
  // Counted in MPI_BYTE basic elements, whichever type (MPI_BYTE or the large derived one)
  // the recv was posted with.
  int rc = owned_type_ != MPI_DATATYPE_NULL ? MPI_Get_elements_x(&status, owned_type_, &got)
                                            : MPI_Get_elements_x(&status, MPI_BYTE, &got);
  HORA_RETURN_IF_ERROR(mpi_status(rc, describe() + ": MPI_Get_elements_x"));
  if (got != static_cast<MPI_Count>(bytes_))
    return Status::mismatch("mpi: " + describe() + ": rank " + std::to_string(peer_) + " sent " +
                            std::to_string(got) + " bytes, " + std::to_string(bytes_) +
                            " were expected");
  return Status::OK();
}

Status MpiRequest::wait(Deadline deadline) {
  if (done_) return result_;
  MPI_Status status;
  FailedRanks& failed = FailedRanks::process();
  Status polled = poll_request(
      &request_, &status, deadline, *aborted_, [this] { return describe(); },
      [&](Deadline::Clock::duration waited) {
        return failed.check_wait({}, global_peer_, waited);
      });
  if (polled.code() == StatusCode::kTimeout && failed.failure_of(global_peer_).ok())
    failed.record_timeout(global_peer_, polled);  // the peer stopped past the deadline
  if (polled.ok()) {
    result_ = is_recv_ ? check_received(status) : Status::OK();
  } else {
    result_ = polled;
    abandon_p2p_request(&request_, is_recv_);
  }
  release_type();
  done_ = true;
  return result_;
}

}  // namespace mpi_backend
}  // namespace collectives
}  // namespace hora
