// NcclCommunicator's lifetime, checks and failure handling; the factory.
#include "collectives/backends/nccl/nccl_communicator.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <sstream>

#include "collectives/backends/builtin/process_liveness.h"
#include "collectives/backends/nccl/nccl_communicator_impl.h"
#include "collectives/backends/nccl/nccl_status.h"
#include "collectives/backends/nccl/nccl_unique_id.h"
#include "collectives/backends/unusable_status.h"
#include "hora/logging.h"
#include "kernels/cuda/cuda_status.h"

namespace hora {
namespace collectives {
namespace nccl_backend {
namespace {

// Device scratch: an int32 for barrier's allreduce, then one byte each for zero-byte sends
// and receives (which travel as one byte).
constexpr size_t kScratchBytes = 256;

std::string this_host(const NcclOptions& options) {
  if (!options.hostname.empty()) return options.hostname;
  char name[256] = {0};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

Status cuda(int error, const std::string& what) { return kernels::cuda::cuda_status(error, what); }

}  // namespace

NcclCommunicator::NcclCommunicator(NcclApi& api, int rank, int size, Store& store,
                                   const NcclOptions& options)
    : api_(api),
      rank_(rank),
      size_(size),
      store_(store),
      options_(options),
      hostname_(this_host(options)),
      board_(&store, "nccl/", rank, size) {}

NcclCommunicator::~NcclCommunicator() {
  queued_.clear();
  if (comm_ != nullptr) {
    bool finalized = false;
    if (broken_.ok() && !aborted_.load(std::memory_order_acquire)) {
      // A clean end: ncclCommFinalize flushes NCCL's work (non-blocking: poll until done).
      ncclResult_t result = api_.comm_finalize(comm_);
      if (result == ncclSuccess || result == ncclInProgress) {
        PollTarget target;
        target.api = &api_;
        target.aborted = &aborted_;
        Status status = poll_until(
            target,
            [this]() -> StatusOr<bool> {
              ncclResult_t async = ncclSuccess;
              ncclResult_t r = api_.comm_get_async_error(comm_, &async);
              if (r != ncclSuccess) return nccl_status(r, "ncclCommGetAsyncError");
              if (async == ncclInProgress) return false;
              HORA_RETURN_IF_ERROR(nccl_status(async, "ncclCommFinalize"));
              return true;
            },
            Deadline::after_seconds(options_.finalize_timeout_s), describe() + ": finalize");
        finalized = status.ok();
        if (!finalized) {
          HORA_LOG(kWarning) << status.to_string() << "; aborting instead";
        }
      }
    }
    if (finalized) {
      api_.comm_destroy(comm_);
    } else {
      api_.comm_abort(comm_);
    }
    comm_ = nullptr;
  }
  buffer_ops_.reset();
  if (collective_event_ != nullptr) api_.event_destroy(collective_event_);
  if (scratch_ != nullptr) api_.free_device(scratch_);
  if (stream_ != nullptr) api_.stream_destroy(stream_);
}

std::string NcclCommunicator::describe() const {
  return "rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
         (device_ >= 0 ? " (cuda:" + std::to_string(device_) + ")" : std::string());
}

Status NcclCommunicator::start(Deadline deadline) {
  const std::string who = "nccl: " + describe();
  // 1. The device, its stream, an event and scratch.
  int count = 0;
  Status devices = cuda(api_.get_device_count(&count), who + ": cudaGetDeviceCount");
  if (!devices.ok() || count == 0)
    return Status::failed_precondition(
        who + ": no usable CUDA device (" +
        (devices.ok() ? std::string("the driver reports none") : devices.message()) +
        "); HORA_BACKEND=nccl needs one GPU per rank");
  device_ = options_.device >= 0 ? options_.device
                                 : (options_.local_rank >= 0 ? options_.local_rank : rank_) % count;
  if (device_ >= count)
    return Status::invalid_argument(who + ": CUDA device " + std::to_string(device_) +
                                    " does not exist (this host has " + std::to_string(count) +
                                    ")");
  const std::string on = "nccl: " + describe();
  HORA_RETURN_IF_ERROR(cuda(api_.set_device(device_), on + ": cudaSetDevice"));
  HORA_RETURN_IF_ERROR(cuda(api_.stream_create(&stream_), on + ": cudaStreamCreate"));
  buffer_ops_ = std::make_unique<NcclBufferOps>(api_, device_, stream_, [this](Deadline deadline) {
    const std::string what = "the device work of one of hora's algorithms";
    HORA_RETURN_IF_ERROR(check_usable(what));
    return wait_stream(collective_event_, what, deadline);
  });
  HORA_RETURN_IF_ERROR(cuda(api_.event_create(&collective_event_), on + ": cudaEventCreate"));
  HORA_RETURN_IF_ERROR(cuda(api_.malloc_device(&scratch_, kScratchBytes), on + ": cudaMalloc"));

  // 2. The unique id, and this process for the dead-peer check.
  HORA_ASSIGN_OR_RETURN(ncclUniqueId id, exchange_unique_id(api_, store_, rank_, size_, deadline));
  const std::string me = hostname_ + " " + std::to_string(::getpid());
  HORA_RETURN_IF_ERROR(
      store_.set("nccl/proc/" + std::to_string(rank_), Bytes(me.begin(), me.end())));

  // 3. Non-blocking init, polled until ready or the deadline.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t result = api_.comm_init_rank_config(&comm_, size_, id, rank_, &config);
  if (result != ncclSuccess && result != ncclInProgress) {
    Status status = nccl_status(result, on + ": ncclCommInitRankConfig",
                                comm_ != nullptr ? api_.get_last_error(comm_) : nullptr);
    return fail(status);
  }
  PollTarget target = poll_target();
  Status ready = poll_until(
      target,
      [this]() -> StatusOr<bool> {
        ncclResult_t async = ncclInProgress;
        ncclResult_t r = api_.comm_get_async_error(comm_, &async);
        if (r != ncclSuccess) return nccl_status(r, "ncclCommGetAsyncError");
        return async == ncclSuccess;
      },
      deadline,
      describe() + ": ncclCommInitRankConfig (joining " + std::to_string(size_) + " ranks)");
  if (!ready.ok()) {
    if (ready.code() == StatusCode::kTimeout) {
      // Name the ranks that never got as far as posting their process record.
      std::string missing;
      for (int r = 0; r < size_; ++r) {
        auto there = store_.check({"nccl/proc/" + std::to_string(r)});
        if (there.ok() && !there.value())
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      }
      if (!missing.empty())
        ready = Status::timeout(ready.message() + "; never arrived: rank " + missing);
    }
    return fail(ready);
  }
  return read_peer_processes(deadline);
}

Status NcclCommunicator::read_peer_processes(Deadline deadline) {
  peers_.assign(size_, PeerProcess{});
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    StatusOr<Bytes> value = store_.get("nccl/proc/" + std::to_string(r), deadline);
    if (!value.ok()) return value.status().with_context(" (nccl: " + describe() + ")");
    std::istringstream in(std::string(value->begin(), value->end()));
    in >> peers_[r].host >> peers_[r].pid;
  }
  return Status::OK();
}

std::string NcclCommunicator::dead_peer() const {
  for (int r = 0; r < static_cast<int>(peers_.size()); ++r) {
    const PeerProcess& p = peers_[r];
    if (r == rank_ || p.pid <= 0 || p.host != hostname_) continue;
    if (builtin::process_is_gone(p.pid))
      return "rank " + std::to_string(r) + " (pid " + std::to_string(p.pid) + " on " + p.host +
             ") is gone";
  }
  return "";
}

PollTarget NcclCommunicator::poll_target() const {
  PollTarget target;
  target.api = &api_;
  target.comm = comm_;
  target.aborted = &aborted_;
  target.dead_peer = [this] { return dead_peer(); };
  return target;
}

Status NcclCommunicator::check_usable(const std::string& what) const {
  if (aborted_.load(std::memory_order_acquire)) return aborted_status("nccl", describe(), what);
  if (!broken_.ok()) return broken_status("nccl", describe(), what, broken_);
  if (comm_ == nullptr)
    return Status::failed_precondition("nccl: " + describe() + ": " + what +
                                       " before the communicator was initialised");
  return Status::OK();
}

Status NcclCommunicator::use_device() {
  return cuda(api_.set_device(device_), "nccl: " + describe() + ": cudaSetDevice");
}

Status NcclCommunicator::fail(const Status& status) {
  if (!broken_.ok()) return status;
  broken_ = status;
  {
    MutexLock lock(&health_mu_);
    health_error_ = status;
    if (comm_ != nullptr) {
      api_.comm_abort(comm_);  // ends NCCL's kernels so the buffers are free again
      comm_ = nullptr;
    }
  }
  for (auto& op : queued_) {
    op->done = true;
    op->status = status;
  }
  queued_.clear();
  if (aborted_.load(std::memory_order_acquire) ||
      (status.code() != StatusCode::kRemote && status.code() != StatusCode::kTimeout))
    return status;
  // NCCL does not say which peer failed: add what the other ranks saw first-hand.
  board_.post(status.message());
  broken_ =
      Status(status.code(), board_.collect(status.message(), std::chrono::milliseconds(1500)));
  return broken_;
}

Status NcclCommunicator::check_device_memory(const void* ptr, size_t bytes,
                                             const std::string& what) {
  if (!options_.check_pointers || bytes == 0) return Status::OK();
  MemoryKind kind = MemoryKind::kHost;
  int device = -1;
  char where[32];
  std::snprintf(where, sizeof where, "%p", ptr);
  Status status =
      cuda(api_.pointer_kind(ptr, &kind, &device),
           "nccl: " + describe() + ": " + what + ": cudaPointerGetAttributes(" + where + ")");
  if (!status.ok()) return Status::invalid_argument(status.message());
  if (kind == MemoryKind::kHost)
    return Status::invalid_argument(
        "nccl: " + describe() + ": " + what + ": buffer " + where +
        " is host memory; the nccl backend moves GPU memory of cuda:" + std::to_string(device_) +
        " (use builtin, gloo or mpi for host tensors)");
  if (kind == MemoryKind::kDevice && device != device_)
    return Status::invalid_argument("nccl: " + describe() + ": " + what + ": buffer " + where +
                                    " is on cuda:" + std::to_string(device) +
                                    ", not on this communicator's cuda:" + std::to_string(device_));
  return Status::OK();
}

Status NcclCommunicator::async_error() {
  if (aborted_.load(std::memory_order_acquire))
    return aborted_status("nccl", describe(), "a stream-ordered collective");
  MutexLock lock(&health_mu_);
  if (!health_error_.ok()) return health_error_;
  if (comm_ == nullptr) return Status::OK();
  ncclResult_t async = ncclSuccess;
  const ncclResult_t r = api_.comm_get_async_error(comm_, &async);
  if (r != ncclSuccess) return nccl_status(r, "nccl: " + describe() + ": ncclCommGetAsyncError");
  if (async == ncclSuccess || async == ncclInProgress) return Status::OK();
  return nccl_status(async, "nccl: " + describe() + ": a stream-ordered collective",
                     api_.get_last_error(comm_));
}

Status NcclCommunicator::finish_enqueue(ncclResult_t result, const std::string& what,
                                        Deadline deadline) {
  if (result != ncclSuccess && result != ncclInProgress)
    return fail(
        nccl_status(result, "nccl: " + describe() + ": " + what, api_.get_last_error(comm_)));
  Status status = poll_until(
      poll_target(),
      [this]() -> StatusOr<bool> {
        ncclResult_t async = ncclSuccess;
        ncclResult_t r = api_.comm_get_async_error(comm_, &async);
        if (r != ncclSuccess) return nccl_status(r, "ncclCommGetAsyncError");
        return async != ncclInProgress;
      },
      deadline, describe() + ": enqueueing " + what);
  return status.ok() ? status : fail(status);
}

Status NcclCommunicator::wait_stream(cudaEvent_t event, const std::string& what,
                                     Deadline deadline) {
  Status status = cuda(api_.event_record(event, stream_),
                       "nccl: " + describe() + ": " + what + ": cudaEventRecord");
  if (status.ok()) {
    status = poll_until(
        poll_target(),
        [&]() -> StatusOr<bool> {
          const int e = api_.event_query(event);
          if (e == cudaErrorNotReady) return false;
          HORA_RETURN_IF_ERROR(cuda(e, "nccl: " + describe() + ": " + what));
          return true;
        },
        deadline, describe() + ": " + what);
  }
  return status.ok() ? status : fail(status);
}

}  // namespace nccl_backend

StatusOr<std::unique_ptr<Communicator>> create_nccl_communicator(int rank, int size, Store& store,
                                                                 const NcclOptions& options,
                                                                 Deadline deadline,
                                                                 nccl_backend::NcclApi& api) {
  if (size < 1 || rank < 0 || rank >= size)
    return Status::invalid_argument("nccl: rank " + std::to_string(rank) + " is not in [0, " +
                                    std::to_string(size) + ")");
  auto comm = std::make_unique<nccl_backend::NcclCommunicator>(api, rank, size, store, options);
  HORA_RETURN_IF_ERROR(comm->start(deadline));
  return std::unique_ptr<Communicator>(std::move(comm));
}

}  // namespace collectives
}  // namespace hora
