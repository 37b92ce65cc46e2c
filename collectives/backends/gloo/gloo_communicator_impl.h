// GlooCommunicator: the class behind create_gloo_communicator (see gloo_communicator.h for the
// contract). Internal to collectives/backends/gloo/: point to point and lifetime live in
// gloo_communicator.cc, the native collectives in gloo_collectives.cc.
#pragma once

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "collectives/backends/gloo/gloo_communicator.h"
#include "collectives/rendezvous/failure_board.h"
#include "hora/mutex.h"
#include "hora/thread_annotations.h"

namespace hora {
namespace collectives {
namespace gloo_backend {

class GlooRequest;

class GlooCommunicator : public Communicator {
 public:
  GlooCommunicator(std::shared_ptr<::gloo::Context> context, const GlooOptions& options,
                   Store& store);
  ~GlooCommunicator() override;
  GlooCommunicator(const GlooCommunicator&) = delete;
  GlooCommunicator& operator=(const GlooCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend_name() const override { return "gloo"; }

  StatusOr<std::unique_ptr<Request>> isend(int peer, const void* data, size_t bytes,
                                           uint32_t tag) override;
  StatusOr<std::unique_ptr<Request>> irecv(int peer, void* data, size_t bytes,
                                           uint32_t tag) override;

  Status allreduce(const void* in, void* out, size_t count, DataType dtype, ReduceOp op,
                   Deadline deadline) override;
  Status allgatherv(const void* in, void* out, const std::vector<size_t>& counts, DataType dtype,
                    Deadline deadline) override;
  Status broadcast(void* buf, size_t count, DataType dtype, int root, Deadline deadline) override;
  Status alltoallv(const void* in, const std::vector<size_t>& send_counts, void* out,
                   const std::vector<size_t>& recv_counts, DataType dtype,
                   Deadline deadline) override;
  Status reducescatter(const void* in, void* out, const std::vector<size_t>& recv_counts,
                       DataType dtype, ReduceOp op, Deadline deadline) override;
  Status barrier(Deadline deadline) override;

  void abort() override;

  // --- for GlooRequest and the collectives ---
  bool is_aborted() const { return aborted_.load(std::memory_order_acquire); }
  // The communicator is unusable after a failed wait (gloo poisons its context) or abort.
  // A collective (`peer` -1) also fails at once when a rank of this communicator is known
  // failed, a send or recv when `peer` is (collectives/failed_ranks.h): it could only wait
  // out its deadline on that rank.
  Status check_usable(const char* what, int peer = -1) const;
  // Records rank `peer` of this communicator, on which a wait timed out with `cause`, as
  // failed (FailedRanks::record_timeout: not when another rank is known failed already).
  void record_failed(int peer, const Status& cause) const;
  // Records the first failure and returns the error to report: for a peer failure, with the
  // other ranks' first-hand reports appended (waits up to 1 s for them).
  Status mark_broken(const Status& status);
  // Registers a pending request so abort() can interrupt its wait.
  void track(GlooRequest* request);
  void untrack(GlooRequest* request);
  // The timeout gloo gets for a wait until `deadline`, capped by options.timeout_s.
  std::chrono::milliseconds timeout_for(Deadline deadline) const;
  // A fresh tag for the next native collective (all ranks call them in the same order).
  uint32_t next_collective_tag() { return collective_tag_++; }
  const std::shared_ptr<::gloo::Context>& context() const { return context_; }
  std::string describe() const;  // "rank 1 of 4"
  std::vector<uint8_t>& scratch() { return scratch_; }
  // gloo wants a real pointer even for 0 bytes; nothing is ever read or written through it.
  uint8_t* empty_buffer() { return &empty_buffer_; }

 private:
  Status validate_peer(int peer, const char* what) const;
  // isend (is_send) and irecv: posts `bytes` at data to or from peer on tag's p2p slot.
  StatusOr<std::unique_ptr<Request>> post(bool is_send, int peer, void* data, size_t bytes,
                                          uint32_t tag);

  const int rank_;
  const int size_;
  const GlooOptions options_;
  std::shared_ptr<::gloo::Context> context_;
  uint32_t collective_tag_ = 0;  // engine thread only
  std::atomic<bool> aborted_{false};
  mutable Mutex mu_;  // guards pending_ and broken_; never held while waiting
  std::set<GlooRequest*> pending_ HORA_GUARDED_BY(mu_);  // created, not yet completed
  Status broken_ HORA_GUARDED_BY(mu_);                   // first failure that poisoned the context
  std::vector<uint8_t> scratch_;  // reducescatter working buffer (engine thread only)
  uint8_t empty_buffer_ = 0;
  FailureBoard board_;  // in the rendezvous store, which outlives this communicator
};

// An unbound-buffer send or receive in flight.
class GlooRequest : public Request {
 public:
  enum class Kind { kSend, kRecv };
  GlooRequest(GlooCommunicator& comm, std::unique_ptr<::gloo::transport::UnboundBuffer> buffer,
              Kind kind, int peer, uint32_t tag);
  ~GlooRequest() override;
  Status wait(Deadline deadline) override;
  // Interrupts a wait in progress (or the next one). Any thread.
  void interrupt();

 private:
  std::string describe() const;

  GlooCommunicator& comm_;
  std::unique_ptr<::gloo::transport::UnboundBuffer> buffer_;
  const Kind kind_;
  const int peer_;
  const uint32_t tag_;
  bool done_ = false;
  Status status_;
};

}  // namespace gloo_backend
}  // namespace collectives
}  // namespace hora
