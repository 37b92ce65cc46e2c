#include "collectives/backends/mpi/mpi_communicator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "collectives/backends/mpi/mpi_request.h"
#include "collectives/backends/mpi/mpi_status.h"
#include "collectives/backends/unusable_status.h"
#include "collectives/failed_ranks.h"
#include "hora/logging.h"
#include "hora/mutex.h"
#include "hora/thread_annotations.h"

namespace hora {
namespace collectives {

using mpi_backend::mpi_status;
using mpi_backend::mpi_thread_level_name;

namespace {

// The thread level hora needs: its background thread calls MPI (serialized with the caller's
// MPI calls); with process sets, several engine threads call MPI at once (multiple).
int required_level(bool thread_multiple) {
  return thread_multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED;
}

// Process-wide: whether hora initialised MPI, how many MPI communicators are alive, and
// whether one ended broken (then MPI_Finalize, which synchronises with the peers, is skipped).
struct MpiRuntime {
  Mutex mu;
  int live HORA_GUARDED_BY(mu) = 0;
  bool hora_initialised HORA_GUARDED_BY(mu) = false;
  bool any_broken HORA_GUARDED_BY(mu) = false;
};

MpiRuntime& runtime() {
  static MpiRuntime* instance = new MpiRuntime();  // never destroyed: used from destructors
  return *instance;
}

// The atexit handler registered when hora initialised MPI: finalises it once no hora
// communicator is alive and none ended broken (MPI_Finalize synchronises with the peers, so
// it is skipped when a collective may still be pending; the process then exits with an
// error and mpirun tears the job down).
void finalize_at_exit() {
  MpiRuntime& rt = runtime();
  MutexLock lock(&rt.mu);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!rt.hora_initialised || finalized) return;
  if (rt.live > 0 || rt.any_broken) {
    // stderr directly: logging's statics may already be gone this late in exit.
    std::fprintf(stderr, "hora: mpi: not calling MPI_Finalize at exit: %s\n",
                 rt.any_broken ? "a collective failed and may still be pending"
                               : "a hora communicator is still alive (no hora shutdown)");
    return;
  }
  MPI_Finalize();
}

// Initialises MPI unless the application did (then sets rt.hora_initialised); checks the
// thread level either way. `rt.mu` serialises MPI's initialisation between threads.
Status ensure_mpi_initialised(MpiRuntime& rt, int required) HORA_REQUIRES(rt.mu) {
  int initialized = 0;
  int finalized = 0;
  HORA_RETURN_IF_ERROR(mpi_status(MPI_Initialized(&initialized), "MPI_Initialized"));
  HORA_RETURN_IF_ERROR(mpi_status(MPI_Finalized(&finalized), "MPI_Finalized"));
  if (finalized)
    return Status::failed_precondition(
        "mpi: MPI is already finalized in this process; MPI can be initialised only once, so "
        "no MPI communicator can be created any more");
  if (!initialized) {
    int provided = MPI_THREAD_SINGLE;
    HORA_RETURN_IF_ERROR(mpi_status(MPI_Init_thread(nullptr, nullptr, required, &provided),
                                    "MPI_Init_thread(" + mpi_thread_level_name(required) + ")"));
    if (provided < required) {
      MPI_Finalize();
      return Status::failed_precondition(
          "mpi: MPI_Init_thread granted " + mpi_thread_level_name(provided) + " but hora needs " +
          mpi_thread_level_name(required) +
          " (its background thread calls MPI): use an MPI built with thread support");
    }
    rt.hora_initialised = true;
    std::atexit(finalize_at_exit);
    return Status::OK();
  }
  int provided = MPI_THREAD_SINGLE;
  HORA_RETURN_IF_ERROR(mpi_status(MPI_Query_thread(&provided), "MPI_Query_thread"));
  if (provided >= required) return Status::OK();
  int is_main = 0;
  HORA_RETURN_IF_ERROR(mpi_status(MPI_Is_thread_main(&is_main), "MPI_Is_thread_main"));
  if (provided == MPI_THREAD_FUNNELED && is_main && required == MPI_THREAD_SERIALIZED) {
    HORA_LOG(kWarning) << "mpi: the application initialised MPI with MPI_THREAD_FUNNELED; hora "
                          "accepts it because this thread is MPI's main thread, but every "
                          "hora MPI call must stay on it";
    return Status::OK();
  }
  return Status::failed_precondition(
      "mpi: the application initialised MPI with " + mpi_thread_level_name(provided) +
      " but hora needs " + mpi_thread_level_name(required) +
      " (its background thread calls MPI): initialise with MPI_Init_thread(..., "
      "MPI_THREAD_SERIALIZED or MPI_THREAD_MULTIPLE, ...)");
}

// A datatype of exactly `bytes` bytes (as MPI_BYTE basic elements) for messages whose byte
// count exceeds what one int count may say: n blocks of `block` bytes plus the remainder.
Status make_bytes_type(size_t bytes, int64_t block_limit, MPI_Datatype* type) {
  const size_t block = static_cast<size_t>(std::min<int64_t>(block_limit, int64_t{1} << 20));
  const size_t blocks = bytes / block;
  const size_t rest = bytes % block;
  if (blocks > static_cast<size_t>(INT_MAX))
    return Status::invalid_argument("mpi: message of " + std::to_string(bytes) +
                                    " bytes is too large");
  MPI_Datatype block_type;
  HORA_RETURN_IF_ERROR(
      mpi_status(MPI_Type_contiguous(static_cast<int>(block), MPI_BYTE, &block_type),
                 "MPI_Type_contiguous (large message block)"));
  int rc;
  if (rest == 0) {
    rc = MPI_Type_contiguous(static_cast<int>(blocks), block_type, type);
  } else {
    int lengths[2] = {static_cast<int>(blocks), static_cast<int>(rest)};
    MPI_Aint displs[2] = {0, static_cast<MPI_Aint>(blocks * block)};
    MPI_Datatype types[2] = {block_type, MPI_BYTE};
    rc = MPI_Type_create_struct(2, lengths, displs, types, type);
  }
  MPI_Type_free(&block_type);
  HORA_RETURN_IF_ERROR(
      mpi_status(rc, "building the datatype of a " + std::to_string(bytes) + "-byte message"));
  return mpi_status(MPI_Type_commit(type), "MPI_Type_commit (large message)");
}

// The communicator of a process set: MPI_Comm_create_group over `members` (world ranks),
// collective over them alone.
Status create_group_comm(const std::vector<int>& members, MPI_Comm* comm) {
  MPI_Group world = MPI_GROUP_NULL;
  MPI_Group group = MPI_GROUP_NULL;
  Status status = mpi_status(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group(WORLD)");
  if (status.ok())
    status =
        mpi_status(MPI_Group_incl(world, static_cast<int>(members.size()), members.data(), &group),
                   "MPI_Group_incl (process set)");
  if (status.ok())
    status = mpi_status(MPI_Comm_create_group(MPI_COMM_WORLD, group, /*tag=*/0, comm),
                        "MPI_Comm_create_group (process set)");
  if (group != MPI_GROUP_NULL) MPI_Group_free(&group);
  if (world != MPI_GROUP_NULL) MPI_Group_free(&world);
  return status;
}

}  // namespace

StatusOr<std::unique_ptr<MpiCommunicator>> MpiCommunicator::create(const MpiOptions& options) {
  if (options.max_count_per_call < 1 || options.max_count_per_call > INT_MAX)
    return Status::invalid_argument("mpi: max_count_per_call " +
                                    std::to_string(options.max_count_per_call) +
                                    " is outside [1, INT_MAX]");
  MpiRuntime& rt = runtime();
  std::unique_ptr<MpiCommunicator> comm;
  Status status;
  {
    MutexLock lock(&rt.mu);
    HORA_RETURN_IF_ERROR(ensure_mpi_initialised(
        rt, required_level(options.thread_multiple || !options.members.empty())));

    comm.reset(new MpiCommunicator());
    comm->options_ = options;
    comm->initialised_mpi_ = rt.hora_initialised;
    // MPI_Comm_dup is collective over MPI_COMM_WORLD; its own errors use the world's handler.
    status = options.members.empty()
                 ? mpi_status(MPI_Comm_dup(MPI_COMM_WORLD, &comm->comm_), "MPI_Comm_dup(WORLD)")
                 : create_group_comm(options.members, &comm->comm_);
    if (status.ok())
      status = mpi_status(MPI_Comm_set_errhandler(comm->comm_, MPI_ERRORS_RETURN),
                          "MPI_Comm_set_errhandler(MPI_ERRORS_RETURN)");
    if (status.ok()) status = mpi_status(MPI_Comm_rank(comm->comm_, &comm->rank_), "MPI_Comm_rank");
    if (status.ok()) status = mpi_status(MPI_Comm_size(comm->comm_, &comm->size_), "MPI_Comm_size");
    if (status.ok()) {
      void* value = nullptr;
      int flag = 0;
      status = mpi_status(MPI_Comm_get_attr(comm->comm_, MPI_TAG_UB, &value, &flag),
                          "MPI_Comm_get_attr(MPI_TAG_UB)");
      if (status.ok() && flag) comm->tag_ub_ = *static_cast<int*>(value);
    }
    // hora's tags are 32-bit; MPI's stop at MPI_TAG_UB (2^31 - 1 in Open MPI). Tags above it go
    // on a second duplicate as tag - (MPI_TAG_UB + 1), which covers every uint32_t tag when
    // MPI_TAG_UB is 2^31 - 1. Collective like the first dup.
    if (status.ok())
      status =
          mpi_status(MPI_Comm_dup(comm->comm_, &comm->high_tag_comm_), "MPI_Comm_dup (high tags)");
    if (status.ok())
      status = mpi_status(MPI_Comm_set_errhandler(comm->high_tag_comm_, MPI_ERRORS_RETURN),
                          "MPI_Comm_set_errhandler(MPI_ERRORS_RETURN) (high tags)");
    if (status.ok()) status = comm->types_.init();
    ++rt.live;  // the destructor (run on failure too) decrements
  }
  if (!status.ok()) {
    comm.reset();  // after the lock is released: the destructor takes it
    return status;
  }
  return comm;
}

MpiCommunicator::~MpiCommunicator() {
  MpiRuntime& rt = runtime();
  MutexLock lock(&rt.mu);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    types_.release();
    if (!broken_.ok()) {
      // A collective is still pending on comm_ (MPI cannot cancel it): leave comm_ alone.
      rt.any_broken = true;
    } else {
      if (high_tag_comm_ != MPI_COMM_NULL) MPI_Comm_free(&high_tag_comm_);
      if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    }
  }
  --rt.live;  // MPI stays initialised for the next communicator; see finalize_at_exit
}

std::string MpiCommunicator::describe() const {
  return "rank " + std::to_string(rank_) + " of " + std::to_string(size_);
}

Status MpiCommunicator::check_usable(const char* what) const {
  if (aborted_.load(std::memory_order_acquire)) return aborted_status("mpi", describe(), what);
  if (!broken_.ok()) return broken_status("mpi", describe(), what, broken_);
  return Status::OK();
}

Status MpiCommunicator::route(int peer, uint32_t tag, const char* what, MPI_Comm* comm,
                              int* mpi_tag) const {
  if (peer < 0 || peer >= size_)
    return Status::invalid_argument("mpi: " + describe() + ": " + what + " peer " +
                                    std::to_string(peer) + " is outside [0, " +
                                    std::to_string(size_) + ")");
  const int64_t t = static_cast<int64_t>(tag);
  if (t <= tag_ub_) {
    *comm = comm_;
    *mpi_tag = static_cast<int>(t);
  } else if (t - (tag_ub_ + 1) <= tag_ub_) {
    *comm = high_tag_comm_;
    *mpi_tag = static_cast<int>(t - (tag_ub_ + 1));
  } else {
    return Status::invalid_argument("mpi: " + describe() + ": " + what + " tag " +
                                    std::to_string(tag) + " exceeds 2 * (MPI_TAG_UB " +
                                    std::to_string(tag_ub_) +
                                    " + 1) - 1, the largest tag this MPI can carry");
  }
  return Status::OK();
}

StatusOr<std::unique_ptr<Request>> MpiCommunicator::post(bool is_recv, int peer, void* data,
                                                         size_t bytes, uint32_t tag) {
  const char* call = is_recv ? "irecv" : "isend";
  HORA_RETURN_IF_ERROR(check_usable(call));
  MPI_Comm comm = MPI_COMM_NULL;
  int mpi_tag = 0;
  HORA_RETURN_IF_ERROR(route(peer, tag, is_recv ? "irecv from" : "isend to", &comm, &mpi_tag));
  MPI_Datatype owned = MPI_DATATYPE_NULL;
  MPI_Datatype type = MPI_BYTE;
  int count = static_cast<int>(bytes);
  if (static_cast<int64_t>(bytes) > options_.max_count_per_call) {
    HORA_RETURN_IF_ERROR(make_bytes_type(bytes, options_.max_count_per_call, &owned));
    type = owned;
    count = 1;
  }
  MPI_Request request = MPI_REQUEST_NULL;
  const int rc = is_recv ? MPI_Irecv(data, count, type, peer, mpi_tag, comm, &request)
                         : MPI_Isend(data, count, type, peer, mpi_tag, comm, &request);
  if (rc != MPI_SUCCESS) {
    if (owned != MPI_DATATYPE_NULL) MPI_Type_free(&owned);
    return mpi_status(rc, describe() +
                              (is_recv ? ": MPI_Irecv from rank " : ": MPI_Isend to rank ") +
                              std::to_string(peer) + " (tag " + std::to_string(tag) + ", " +
                              std::to_string(bytes) + " bytes)");
  }
  return std::unique_ptr<Request>(new mpi_backend::MpiRequest(
      request, owned, is_recv, rank_, peer, FailedRanks::global_rank(options_.members, peer), tag,
      bytes, &aborted_));
}

StatusOr<std::unique_ptr<Request>> MpiCommunicator::isend(int peer, const void* data, size_t bytes,
                                                          uint32_t tag) {
  // MPI_Isend takes a const buffer; post() shares the code path with irecv.
  return post(/*is_recv=*/false, peer, const_cast<void*>(data), bytes, tag);
}

StatusOr<std::unique_ptr<Request>> MpiCommunicator::irecv(int peer, void* data, size_t bytes,
                                                          uint32_t tag) {
  return post(/*is_recv=*/true, peer, data, bytes, tag);
}

StatusOr<std::unique_ptr<Communicator>> make_mpi_communicator(int expected_rank, int expected_size,
                                                              const MpiOptions& options) {
  HORA_ASSIGN_OR_RETURN(auto comm, MpiCommunicator::create(options));
  if ((expected_rank >= 0 && expected_rank != comm->rank()) ||
      (expected_size >= 0 && expected_size != comm->size()))
    return Status::invalid_argument(
        "mpi: the launcher environment says rank " + std::to_string(expected_rank) + " of " +
        std::to_string(expected_size) + " but MPI_COMM_WORLD says rank " +
        std::to_string(comm->rank()) + " of " + std::to_string(comm->size()));
  return std::unique_ptr<Communicator>(std::move(comm));
}

}  // namespace collectives
}  // namespace hora
