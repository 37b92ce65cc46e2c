#include "collectives/sub_communicator.h"

#include <algorithm>
#include <string>

#include "hora/logging.h"

namespace hora {
namespace collectives {

SubCommunicator::SubCommunicator(Communicator& parent, const std::vector<int>& members)
    : parent_(parent), members_(members) {
  auto it = std::find(members_.begin(), members_.end(), parent_.rank());
  HORA_CHECK(it != members_.end())
      << "rank " << parent_.rank() << " is not a member of its sub-communicator";
  rank_ = static_cast<int>(it - members_.begin());
}

StatusOr<int> SubCommunicator::to_parent(int peer) const {
  if (peer < 0 || peer >= size())
    return Status::invalid_argument("sub-communicator rank " + std::to_string(rank_) + " (rank " +
                                    std::to_string(parent_.rank()) + "): peer " +
                                    std::to_string(peer) + " is out of range [0, " +
                                    std::to_string(size()) + ")");
  return members_[peer];
}

Status SubCommunicator::send(int peer, const void* data, size_t bytes, uint32_t tag,
                             Deadline deadline) {
  HORA_ASSIGN_OR_RETURN(int p, to_parent(peer));
  return parent_.send(p, data, bytes, tag, deadline);
}

Status SubCommunicator::recv(int peer, void* data, size_t bytes, uint32_t tag, Deadline deadline) {
  HORA_ASSIGN_OR_RETURN(int p, to_parent(peer));
  return parent_.recv(p, data, bytes, tag, deadline);
}

StatusOr<std::unique_ptr<Request>> SubCommunicator::isend(int peer, const void* data, size_t bytes,
                                                          uint32_t tag) {
  HORA_ASSIGN_OR_RETURN(int p, to_parent(peer));
  return parent_.isend(p, data, bytes, tag);
}

StatusOr<std::unique_ptr<Request>> SubCommunicator::irecv(int peer, void* data, size_t bytes,
                                                          uint32_t tag) {
  HORA_ASSIGN_OR_RETURN(int p, to_parent(peer));
  return parent_.irecv(p, data, bytes, tag);
}

}  // namespace collectives
}  // namespace hora
