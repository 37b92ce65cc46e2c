// SubCommunicator: a group of some of a communicator's ranks, as a Communicator of its own, so
// that hora's algorithms run unchanged over a subset (the hierarchical algorithms run them
// within each host and across hosts). It only renumbers: sub-rank i is the parent's rank
// members[i], and every send and receive goes through the parent's point to point with the
// caller's tag. No connection is made and nothing is negotiated, so making one is cheap
// (O(members) to find this rank) and every member makes its own.
//
// Matching: two sub-communicators over one parent see each other's messages when they share
// a pair of ranks and a tag; the hierarchical algorithms never have such a pair at once (ranks
// of one host vs one rank per host). Native collectives are not offered (kUnimplemented, the
// Communicator defaults): they would involve every parent rank.
//
// Ownership: borrows the parent and `members`, which must outlive it. Threads: the parent's
// contract (one thread at a time; abort from any thread aborts the parent).
#pragma once

#include <vector>

#include "collectives/communicator.h"

namespace hora {
namespace collectives {

class SubCommunicator : public Communicator {
 public:
  // REQUIRES: members are distinct ranks of `parent` and include parent.rank().
  SubCommunicator(Communicator& parent, const std::vector<int>& members);
  SubCommunicator(const SubCommunicator&) = delete;
  SubCommunicator& operator=(const SubCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  const char* backend_name() const override { return parent_.backend_name(); }
  const char* cost_model() const override { return parent_.cost_model(); }

  // Peers are sub-ranks; an out-of-range peer is kInvalidArgument naming it.
  Status send(int peer, const void* data, size_t bytes, uint32_t tag, Deadline deadline) override;
  Status recv(int peer, void* data, size_t bytes, uint32_t tag, Deadline deadline) override;
  StatusOr<std::unique_ptr<Request>> isend(int peer, const void* data, size_t bytes,
                                           uint32_t tag) override;
  StatusOr<std::unique_ptr<Request>> irecv(int peer, void* data, size_t bytes,
                                           uint32_t tag) override;

  BufferOps* buffer_ops() override { return parent_.buffer_ops(); }
  void abort() override { parent_.abort(); }

  // The parent's rank of sub-rank `peer`. REQUIRES: 0 <= peer < size().
  int parent_rank(int peer) const { return members_[peer]; }

 private:
  StatusOr<int> to_parent(int peer) const;

  Communicator& parent_;
  const std::vector<int>& members_;
  int rank_;
};

}  // namespace collectives
}  // namespace hora
