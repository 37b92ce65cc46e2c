// NcclCommunicator's point to point: queued isend/irecv, launched as ncclGroupStart/End groups
// when a request is waited (the rule and why: nccl_communicator.h).
#include <algorithm>

#include "collectives/backends/nccl/nccl_communicator_impl.h"
#include "collectives/backends/nccl/nccl_status.h"
#include "kernels/cuda/cuda_status.h"

namespace hora {
namespace collectives {
namespace nccl_backend {
namespace {

// Offsets of the one-byte stand-ins for zero-byte messages in the communicator's scratch.
constexpr size_t kZeroSendOffset = 64;
constexpr size_t kZeroRecvOffset = 128;

std::string op_name(const P2pOp& op) {
  return std::string(op.is_send ? "send to" : "recv from") + " rank " + std::to_string(op.peer) +
         " (" + std::to_string(op.bytes) + " bytes)";
}

class NcclRequest final : public Request {
 public:
  NcclRequest(NcclCommunicator& comm, std::shared_ptr<P2pOp> op)
      : comm_(comm), op_(std::move(op)) {}
  // A request dropped before it was launched never reaches NCCL (its buffer may be gone by the
  // time a later wait would launch it). One launched and not waited may still be in flight:
  // the caller aborts the communicator before freeing its buffer (communicator.h).
  ~NcclRequest() override {
    if (!op_->done && op_->group == nullptr) comm_.drop_queued(op_.get());
  }
  Status wait(Deadline deadline) override {
    if (op_->done) return op_->status;
    Status status = comm_.wait_op(*op_, deadline);
    op_->done = true;
    op_->status = status;
    return status;
  }

 private:
  NcclCommunicator& comm_;
  std::shared_ptr<P2pOp> op_;
};

}  // namespace

StatusOr<std::unique_ptr<Request>> NcclCommunicator::post(bool is_send, int peer, void* data,
                                                          size_t bytes, uint32_t tag) {
  const char* what = is_send ? "send to" : "recv from";
  if (peer < 0 || peer >= size_)
    return Status::invalid_argument("nccl: " + describe() + ": " + what + " peer " +
                                    std::to_string(peer) + " is not a rank in [0, " +
                                    std::to_string(size_) + ")");
  HORA_RETURN_IF_ERROR(check_usable(what));
  HORA_RETURN_IF_ERROR(
      check_device_memory(data, bytes, std::string(what) + " rank " + std::to_string(peer)));
  auto op = std::make_shared<P2pOp>();
  op->is_send = is_send;
  op->peer = peer;
  op->data = data;
  op->bytes = bytes;
  op->tag = tag;
  queued_.push_back(op);
  return std::unique_ptr<Request>(new NcclRequest(*this, std::move(op)));
}

StatusOr<std::unique_ptr<Request>> NcclCommunicator::isend(int peer, const void* data, size_t bytes,
                                                           uint32_t tag) {
  return post(true, peer, const_cast<void*>(data), bytes, tag);
}

StatusOr<std::unique_ptr<Request>> NcclCommunicator::irecv(int peer, void* data, size_t bytes,
                                                           uint32_t tag) {
  return post(false, peer, data, bytes, tag);
}

Status NcclCommunicator::launch_group(std::vector<std::shared_ptr<P2pOp>> ops, Deadline deadline) {
  if (ops.empty()) return Status::OK();
  const std::string what = ops.size() == 1
                               ? op_name(*ops[0])
                               : "a group of " + std::to_string(ops.size()) +
                                     " sends and receives (first: " + op_name(*ops[0]) + ")";
  HORA_RETURN_IF_ERROR(use_device());
  cudaEvent_t event = nullptr;
  Status status = kernels::cuda::cuda_status(api_.event_create(&event),
                                             "nccl: " + describe() + ": cudaEventCreate");
  if (!status.ok()) return fail(status);
  auto group = std::make_shared<GroupEvent>(api_, event);
  ncclResult_t result = api_.group_start();
  for (const auto& op : ops) {
    if (result != ncclSuccess) break;
    auto* scratch = static_cast<uint8_t*>(scratch_);
    const size_t count = op->bytes == 0 ? 1 : op->bytes;
    if (op->is_send) {
      const void* data = op->bytes == 0 ? scratch + kZeroSendOffset : op->data;
      result = api_.send(data, count, ncclUint8, op->peer, comm_, stream_);
    } else {
      void* data = op->bytes == 0 ? scratch + kZeroRecvOffset : op->data;
      result = api_.recv(data, count, ncclUint8, op->peer, comm_, stream_);
    }
  }
  // ncclGroupEnd must close the group even after a failed call inside it.
  const ncclResult_t end = api_.group_end();
  HORA_RETURN_IF_ERROR(finish_enqueue(result != ncclSuccess ? result : end, what, deadline));
  status = kernels::cuda::cuda_status(api_.event_record(group->event(), stream_),
                                      "nccl: " + describe() + ": cudaEventRecord");
  if (!status.ok()) return fail(status);
  for (const auto& op : ops) op->group = group;
  return Status::OK();
}

Status NcclCommunicator::launch_for(const P2pOp& target, Deadline deadline) {
  // Every queued send, and (for a receive) the queued receives from its peer up to it.
  std::vector<std::shared_ptr<P2pOp>> group;
  std::vector<std::shared_ptr<P2pOp>> rest;
  bool reached = false;
  for (auto& op : queued_) {
    const bool take = op->is_send || (!target.is_send && !reached && op->peer == target.peer);
    if (op.get() == &target) reached = true;
    (take ? group : rest).push_back(op);
  }
  queued_ = std::move(rest);
  return launch_group(std::move(group), deadline);
}

void NcclCommunicator::drop_queued(const P2pOp* op) {
  for (auto it = queued_.begin(); it != queued_.end(); ++it) {
    if (it->get() == op) {
      queued_.erase(it);
      return;
    }
  }
}

Status NcclCommunicator::launch_all_queued(Deadline deadline) {
  std::vector<std::shared_ptr<P2pOp>> group;
  group.swap(queued_);
  return launch_group(std::move(group), deadline);
}

Status NcclCommunicator::wait_op(P2pOp& op, Deadline deadline) {
  const std::string what = op_name(op);
  HORA_RETURN_IF_ERROR(check_usable(what));
  if (op.group == nullptr) HORA_RETURN_IF_ERROR(launch_for(op, deadline));
  if (op.group == nullptr)
    return Status::internal("nccl: " + describe() + ": " + what + " was not launched");
  if (op.group->is_complete()) return Status::OK();
  GroupEvent& group = *op.group;
  Status status = poll_until(
      poll_target(),
      [&]() -> StatusOr<bool> {
        const int e = api_.event_query(group.event());
        if (e == cudaErrorNotReady) return false;
        HORA_RETURN_IF_ERROR(kernels::cuda::cuda_status(e, "nccl: " + describe() + ": " + what));
        return true;
      },
      deadline, describe() + ": " + what);
  if (!status.ok()) return fail(status);
  group.mark_complete();
  return Status::OK();
}

}  // namespace nccl_backend
}  // namespace collectives
}  // namespace hora
