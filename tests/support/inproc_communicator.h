// InProcWorld / InProcCommunicator: a Communicator where N threads of one process each hold
// one rank, for in-process many-rank tests of hora's algorithms.
//
// Two send modes. kEager: messages are copied into per-(src, dst, tag) FIFOs at send time and
// isend completes at once (unless the destination is dead), like a buffered transport.
// kRendezvous: the queue holds a pointer to the sender's buffer, the receiver copies from it
// when its receive is waited, and the send completes only then, like MPI's rendezvous protocol
// or gloo's unbound buffers: it finds algorithms that would deadlock on a real transport or
// that reuse a send buffer before the send completed. A send request destroyed unfinished
// withdraws its message. Either way messages are matched to receives in posting order
// (each send and each receive takes the next sequence number of its (src, dst, tag) stream),
// so MPI's non-overtaking rule holds even when receives are waited out of order. A receive
// whose byte count differs from the matching send's is kMismatch naming both ranks.
//
// Failures, for failure tests:
// - kill(rank) or kill_after_ops(rank, n): the rank is dead; its peers' receives that have no
//   message yet, and their sends to it, fail with kRemote "rank R is dead"; the dead rank's
//   own later calls fail too.
// - InProcCommunicator::fail(status) (and abort(), which is fail("aborted")): the rank has
//   left with that reason; its own waits fail at once and its peers' waits on it fail with
//   kRemote "rank R left: <reason>", so an error propagates along the ring the way a real
//   job's teardown would, and survivors name the rank that died first.
// - Waits honour the Deadline: kTimeout "rank X timed out waiting for rank P (tag, bytes)".
//
// Ownership: the world owns the shared queues and outlives its communicators (make them
// with communicator(rank)). Thread-safety: one mutex guards all queues and states; one
// condition variable per rank wakes that rank's waits; abort()/fail()/kill() from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "collectives/communicator.h"

namespace hora {
namespace test_support {

class InProcCommunicator;

enum class SendMode : uint8_t { kEager = 0, kRendezvous };

class InProcWorld {
 public:
  explicit InProcWorld(int size, SendMode mode = SendMode::kEager);
  InProcWorld(const InProcWorld&) = delete;
  InProcWorld& operator=(const InProcWorld&) = delete;

  int size() const { return size_; }
  // A communicator for `rank`; call once per rank. The world must outlive it.
  std::unique_ptr<InProcCommunicator> communicator(int rank);

  // Marks `rank` dead now / after it has posted `ops` more sends and receives in total.
  void kill(int rank);
  void kill_after_ops(int rank, int64_t ops);

  // Messages sent and not yet received (tests check that collectives leave none behind).
  size_t pending_messages();

 private:
  friend class InProcCommunicator;
  friend class InProcRequest;
  friend class RendezvousSendRequest;
  using Key = std::tuple<int, int, uint32_t>;  // src, dst, tag
  // A rendezvous send's completion, shared by the sender's request and the queued message
  // (the one that outlives the other is whichever side finishes last).
  struct SendState {
    bool is_done = false;
    Status status;
  };
  struct Message {
    std::vector<uint8_t> data;       // kEager: the copy
    const void* borrowed = nullptr;  // kRendezvous: the sender's buffer
    size_t bytes = 0;
    std::shared_ptr<SendState> send;  // kRendezvous only
  };
  struct Stream {
    uint64_t next_send = 0;
    uint64_t next_recv = 0;
    std::map<uint64_t, Message> messages;  // by sequence number
  };
  struct RankState {
    bool is_dead = false;
    bool has_left = false;
    std::string left_reason;
    int64_t ops_until_death = -1;  // -1: never
    std::condition_variable cv;    // wakes this rank's waits
  };

  // REQUIRES: mu_ held. Counts one op of `rank`, killing it when its budget runs out.
  void count_op_locked(int rank);
  // REQUIRES: mu_ held. Why `peer` cannot talk any more, or OK.
  Status peer_failure_locked(int peer) const;
  void wake_all_locked();

  const int size_;
  const SendMode mode_;
  std::mutex mu_;  // guards streams_ and ranks_ (every field); taken alone, never nested
  std::map<Key, Stream> streams_;
  std::vector<std::unique_ptr<RankState>> ranks_;
};

class InProcCommunicator : public collectives::Communicator {
 public:
  InProcCommunicator(InProcWorld* world, int rank) : world_(world), rank_(rank) {}

  int rank() const override { return rank_; }
  int size() const override { return world_->size(); }
  const char* backend_name() const override { return "inproc"; }

  StatusOr<std::unique_ptr<collectives::Request>> isend(int peer, const void* data, size_t bytes,
                                                        uint32_t tag) override;
  StatusOr<std::unique_ptr<collectives::Request>> irecv(int peer, void* data, size_t bytes,
                                                        uint32_t tag) override;
  void abort() override;
  // This rank leaves with `reason`: see the file comment. Any thread.
  void fail(const Status& reason);

 private:
  Status check_peer(int peer, const char* what) const;
  InProcWorld* world_;
  const int rank_;
};

}  // namespace test_support
}  // namespace hora
