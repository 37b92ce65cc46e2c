// Waiting on MPI requests with a deadline and an abort flag, and the point-to-point Request.
//
// poll_request() is the one wait loop of the MPI backend: MPI_Test with a backoff (spin about
// 50 us, then sleep 10 us doubling up to 1 ms), returning at completion, at the deadline
// (kTimeout) or when `aborted` is set (kRemote). Nonblocking collectives progress inside
// MPI_Test, so the loop serves them too. Not thread-safe per request (one waiter).
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "collectives/communicator.h"
#include "core/base/deadline.h"
#include "hora/status.h"

namespace hora {
namespace collectives {
namespace mpi_backend {

// Returns OK when *request completed (it is then MPI_REQUEST_NULL and *status filled), an
// MPI error as Status (the request is then considered gone), or kTimeout / kRemote with
// `describe()` in the message while *request stays active for the caller to cancel or free.
// `known_failure(waited)` (may be empty), asked every 100 ms once the wait is that long,
// returns the error of a rank the request waits on that this process already knows failed
// (collectives/failed_ranks.h): the wait returns it at once, the request left active.
Status poll_request(
    MPI_Request* request, MPI_Status* status, Deadline deadline, const std::atomic<bool>& aborted,
    const std::function<std::string()>& describe,
    const std::function<Status(Deadline::Clock::duration)>& known_failure = nullptr);

// Gives up on an active point-to-point request: a recv is cancelled (MPI_Cancel, then waited
// for, which MPI guarantees to be local); a send is released with MPI_Request_free, since
// Open MPI's pml cannot cancel sends. Leaves *request MPI_REQUEST_NULL.
void abandon_p2p_request(MPI_Request* request, bool is_recv);

// One MPI_Isend or MPI_Irecv. `owned_type` (a derived type for messages above the int count
// limit, else MPI_DATATYPE_NULL) is freed when the request is done. Must not outlive its
// communicator (the abort flag is borrowed).
class MpiRequest final : public Request {
 public:
  // `global_peer`: the job's rank of `peer`, under which a timeout is recorded and a known
  // failure looked up (collectives/failed_ranks.h).
  MpiRequest(MPI_Request request, MPI_Datatype owned_type, bool is_recv, int rank, int peer,
             int global_peer, uint32_t tag, size_t bytes, const std::atomic<bool>* aborted);
  ~MpiRequest() override;
  MpiRequest(const MpiRequest&) = delete;
  MpiRequest& operator=(const MpiRequest&) = delete;

  Status wait(Deadline deadline) override;

 private:
  std::string describe() const;
  Status check_received(const MPI_Status& status) const;
  void release_type();

  MPI_Request request_;
  MPI_Datatype owned_type_;
  bool is_recv_;
  int rank_;
  int peer_;
  int global_peer_;
  uint32_t tag_;
  size_t bytes_;
  const std::atomic<bool>* aborted_;
  bool done_ = false;
  Status result_;
};

}  // namespace mpi_backend
}  // namespace collectives
}  // namespace hora
