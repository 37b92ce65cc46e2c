#include "collectives/communicator.h"

#include <string>

namespace hora {
namespace collectives {
namespace {

Status lacks(const Communicator& comm, const char* what) {
  return Status::unimplemented(std::string("backend '") + comm.backend_name() + "' has no native " +
                               what +
                               ": use one of hora's algorithms (HORA_ALLREDUCE_ALGO=ring|tree|rd)");
}

}  // namespace

Status Communicator::send(int peer, const void* data, size_t bytes, uint32_t tag,
                          Deadline deadline) {
  HORA_ASSIGN_OR_RETURN(auto request, isend(peer, data, bytes, tag));
  return request->wait(deadline);
}

Status Communicator::recv(int peer, void* data, size_t bytes, uint32_t tag, Deadline deadline) {
  HORA_ASSIGN_OR_RETURN(auto request, irecv(peer, data, bytes, tag));
  return request->wait(deadline);
}

Status Communicator::allreduce(const void*, void*, size_t, DataType, ReduceOp, Deadline) {
  return lacks(*this, "allreduce");
}
Status Communicator::allreduce_spans(const std::vector<ReduceSpan>&, DataType, ReduceOp, double,
                                     double, Deadline) {
  return lacks(*this, "gather-list allreduce");
}
Status Communicator::allgatherv(const void*, void*, const std::vector<size_t>&, DataType,
                                Deadline) {
  return lacks(*this, "allgatherv");
}
Status Communicator::broadcast(void*, size_t, DataType, int, Deadline) {
  return lacks(*this, "broadcast");
}
Status Communicator::alltoallv(const void*, const std::vector<size_t>&, void*,
                               const std::vector<size_t>&, DataType, Deadline) {
  return lacks(*this, "alltoallv");
}
Status Communicator::reducescatter(const void*, void*, const std::vector<size_t>&, DataType,
                                   ReduceOp, Deadline) {
  return lacks(*this, "reducescatter");
}
Status Communicator::barrier(Deadline) { return lacks(*this, "barrier"); }
Status Communicator::allreduce_on_stream(const void*, void*, size_t, DataType, ReduceOp, void*,
                                         Deadline) {
  return lacks(*this, "stream-ordered allreduce");
}

}  // namespace collectives
}  // namespace hora
