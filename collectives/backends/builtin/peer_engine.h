// PeerEngine: the messages between this rank and one peer over one ByteLink. Sends go out in
// the order posted; each arriving message (frame header + payload) is matched to the first
// posted recv with its tag (MPI's non-overtaking rule per tag). A message nobody has posted a
// recv for yet stays in the link until the caller allows buffering it (progress with
// allow_unexpected, which the communicator does only when nothing else moves, so two ranks
// that both send before they receive never deadlock); a later recv then takes it from there.
//
// Errors: a recv whose size differs from the message fails with kMismatch (the payload is
// discarded, the link goes on); a corrupted or oversized header, or a broken link, fails
// every pending operation of this peer, and every later one, with the link's error.
//
// Threads: one thread (the communicator's) drives it.
#pragma once

#include <deque>
#include <list>
#include <memory>
#include <vector>

#include "collectives/backends/builtin/byte_link.h"
#include "collectives/backends/builtin/frame.h"

namespace hora {
namespace collectives {
namespace builtin {

// One posted send or recv. Shared by the Request and the engine until it completes.
struct Op {
  bool is_send = false;
  int peer = 0;
  uint32_t tag = 0;
  const uint8_t* src = nullptr;  // send
  uint8_t* dst = nullptr;        // recv
  size_t bytes = 0;
  uint8_t header[kFrameHeaderBytes] = {};
  size_t done = 0;  // send: header + payload bytes written; recv: payload bytes read
  bool complete = false;
  Status status;
};

class PeerEngine {
 public:
  PeerEngine(int rank, int peer, std::unique_ptr<ByteLink> link, uint64_t max_message_bytes);

  void post_send(const std::shared_ptr<Op>& op);
  void post_recv(const std::shared_ptr<Op>& op);
  // Moves whatever bytes can move now (bounded per call); true when anything moved or
  // completed.
  bool progress(bool allow_unexpected);
  // True while some posted operation is not complete.
  bool pending() const {
    return !sends_.empty() || !recvs_.empty() || receiving_op_ || waiters_ > 0;
  }
  // True while a send has bytes not yet written (poll for POLLOUT).
  bool sending() const { return !sends_.empty(); }
  bool broken() const { return !broken_.ok(); }
  // Why the link broke (OK while it is not broken).
  const Status& broken_status() const { return broken_; }
  // Fails every pending and later operation with `status`.
  void fail(const Status& status);
  ByteLink& link() { return *link_; }
  int peer() const { return peer_; }

 private:
  struct Unexpected {
    uint32_t tag;
    std::vector<uint8_t> data;
    size_t done = 0;
    std::shared_ptr<Op> waiter;
  };
  enum class RxState { kHeader, kMatch, kPayload, kDiscard };

  bool progress_send();
  bool progress_recv(bool allow_unexpected);
  // One step of progress_recv in its current rx_state_: go on, stop for now (nothing more to
  // read, or an unexpected frame not allowed), or stop with the engine broken (fail called).
  // Each sets *moved when it moved bytes or state; the payload steps spend *budget.
  enum class RxStep { kGoOn, kIdle, kBroken };
  RxStep read_bytes(uint8_t* dst, size_t want, size_t* got);
  RxStep recv_header(bool* moved);
  RxStep match_frame(bool allow_unexpected, bool* moved);
  RxStep recv_payload(size_t* budget, bool* moved);
  RxStep discard_payload(size_t* budget, bool* moved);
  void complete(const std::shared_ptr<Op>& op, Status status);
  void finish_unexpected(std::list<Unexpected>::iterator it);
  // Completes recv `op` with a whole unexpected message: its bytes, or kMismatch on a size
  // other than the recv's.
  void deliver(const Unexpected& message, const std::shared_ptr<Op>& op);
  Status mismatch(uint32_t tag, uint64_t sent, size_t posted) const;

  int rank_;
  int peer_;
  std::unique_ptr<ByteLink> link_;
  uint64_t max_message_bytes_;
  Status broken_;
  std::deque<std::shared_ptr<Op>> sends_;
  std::deque<std::shared_ptr<Op>> recvs_;
  std::list<Unexpected> unexpected_;
  int waiters_ = 0;  // unexpected entries with a recv attached
  // Incoming message state.
  RxState rx_state_ = RxState::kHeader;
  uint8_t rx_header_[kFrameHeaderBytes];
  size_t rx_header_got_ = 0;
  FrameHeader rx_frame_;
  std::shared_ptr<Op> receiving_op_;
  std::list<Unexpected>::iterator receiving_unexpected_;
  bool into_unexpected_ = false;
  uint64_t rx_done_ = 0;
  std::vector<uint8_t> discard_;
};

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
