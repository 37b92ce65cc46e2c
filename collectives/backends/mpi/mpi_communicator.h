// The MPI backend: a Communicator over Open MPI (Debian's libopenmpi, 4.1), for jobs launched
// with mpirun or srun.
//
// MPI ownership. If the application already initialised MPI, hora uses it and never finalises
// it. Otherwise create() calls MPI_Init_thread and registers an atexit handler that calls
// MPI_Finalize when the process exits, provided no hora communicator is still alive and none
// ended broken. MPI stays initialised between communicators, so hora::shutdown() followed by
// hora::init() works (MPI can be initialised only once per process). MPI wants MPI_Finalize
// on the thread that called MPI_Init_thread: create the first communicator (hora::init) on
// the thread that exits the process, normally the main thread.
//
// Thread level. hora asks for MPI_THREAD_SERIALIZED: only one thread calls MPI at a time (the
// engine's background thread; abort() only sets an atomic flag), but that thread is not the
// application's main thread, so MPI_THREAD_FUNNELED (MPI calls only from the main thread)
// would not cover it once the application has initialised MPI on its main thread. A granted
// level below SERIALIZED is an error naming both levels. Exception: when the application
// initialised MPI with FUNNELED and create() runs on MPI's main thread, it is accepted (that
// thread then owns the communicator). An application that itself calls MPI while hora runs
// must initialise with MPI_THREAD_MULTIPLE; hora cannot check that.
//
// Isolation. hora works on MPI_Comm_dup(MPI_COMM_WORLD), so its messages never match the
// application's. That communicator has MPI_ERRORS_RETURN and every MPI error becomes a Status
// (mpi_status.h). create() is collective over MPI_COMM_WORLD: every rank must call it.
//
// Point to point: MPI_Isend/MPI_Irecv with hora's tag. MPI tags stop at MPI_TAG_UB (2^31 - 1
// in Open MPI) while hora's are 32-bit, so tags above MPI_TAG_UB travel on a second duplicate
// communicator as tag - (MPI_TAG_UB + 1): every uint32_t tag when MPI_TAG_UB is 2^31 - 1; a
// tag beyond what two communicators carry (an MPI with a smaller MPI_TAG_UB) is
// kInvalidArgument. Waits poll
// MPI_Test with a backoff (spin about 50 us, then sleep 10 us doubling to 1 ms, so a long wait
// costs little CPU), and honour the Deadline (kTimeout naming the peer; a timed-out recv is
// cancelled with MPI_Cancel, a timed-out send is released with MPI_Request_free because Open
// MPI cannot cancel sends) and abort() (kRemote "aborted"). A recv is posted for exactly the
// expected bytes: a larger message gives kMismatch (MPI_ERR_TRUNCATE) and a smaller one
// kMismatch from MPI_Get_count, both naming the peer and the sizes. Messages above INT_MAX
// bytes go as one message of a derived datatype (MPI counts are int), so the size check holds.
//
// Native collectives: MPI-3 nonblocking ones (MPI_Iallreduce, MPI_Iallgatherv, MPI_Ibcast,
// MPI_Ialltoallv, MPI_Ireduce_scatter, MPI_Ibarrier) finished by the same test loop, so
// deadlines and abort() hold even inside a collective. A collective cannot be cancelled in
// MPI, so a timed-out or aborted collective leaves this communicator broken: every later call
// fails with the first error, the communicator is not freed, and MPI is not finalised by hora
// (MPI_Finalize would wait for the peers). The job is then torn down by mpirun when the
// process exits with an error, which is what the engine does on any collective failure.
// Counts: allreduce and broadcast above INT_MAX elements are split into several calls;
// allgatherv, alltoallv and reducescatter whose total exceeds INT_MAX elements fail with
// kUnimplemented (their displacements are int in MPI-3). dtypes/ops: mpi_types.h.
// kAverage is MPI_SUM followed by kernels::scale(1/size).
//
// Threads: one thread at a time (the Communicator contract); abort() from any thread.
#pragma once

#include <mpi.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <memory>
#include <vector>

#include "collectives/backends/mpi/mpi_types.h"
#include "collectives/communicator.h"
#include "hora/status.h"

namespace hora {
namespace collectives {

struct MpiOptions {
  // The largest count passed to one MPI call (elements for collectives, bytes for point to
  // point). INT_MAX in production; tests lower it to exercise the large-count paths.
  int64_t max_count_per_call = INT_MAX;
  // The MPI_COMM_WORLD ranks of a process set (hora/process_set.h), sorted; empty: the whole
  // world. Non-empty: the communicator is MPI_Comm_create_group over them (collective over the
  // members only), which needs MPI_THREAD_MULTIPLE, since the job's own engine thread calls
  // MPI at the same time.
  std::vector<int> members;
  // Ask for MPI_THREAD_MULTIPLE when hora initialises MPI (a job that will have process sets);
  // MPI_THREAD_SERIALIZED otherwise.
  bool thread_multiple = false;
};

class MpiCommunicator final : public Communicator {
 public:
  // Initialises MPI if needed (see above) and duplicates MPI_COMM_WORLD (or makes the group
  // of options.members). Collective over those ranks.
  static StatusOr<std::unique_ptr<MpiCommunicator>> create(const MpiOptions& options = {});
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend_name() const override { return "mpi"; }

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

  void abort() override { aborted_.store(true, std::memory_order_release); }

  // True when hora initialised MPI (so hora finalises it at exit).
  bool initialised_mpi() const { return initialised_mpi_; }
  // hora's duplicate of MPI_COMM_WORLD (for tests and diagnostics).
  MPI_Comm mpi_comm() const { return comm_; }

 private:
  MpiCommunicator() = default;

  std::string describe() const;
  Status check_usable(const char* what) const;
  // Checks peer and tag, and picks the communicator and MPI tag that carry hora's `tag`.
  Status route(int peer, uint32_t tag, const char* what, MPI_Comm* comm, int* mpi_tag) const;
  // MPI_Isend or MPI_Irecv of `bytes` (as a derived type past max_count_per_call).
  StatusOr<std::unique_ptr<Request>> post(bool is_recv, int peer, void* data, size_t bytes,
                                          uint32_t tag);
  // Waits for a collective's request; on failure marks the communicator broken.
  Status finish_collective(MPI_Request request, const std::string& what, Deadline deadline);
  Status check_counts(const std::vector<size_t>& counts, const char* what, const char* name,
                      std::vector<int>* ints, std::vector<int>* displs) const;

  int rank_ = 0;
  int size_ = 1;
  int64_t tag_ub_ = 32767;
  bool initialised_mpi_ = false;
  MpiOptions options_;
  MPI_Comm comm_ = MPI_COMM_NULL;           // collectives, and tags <= tag_ub_
  MPI_Comm high_tag_comm_ = MPI_COMM_NULL;  // tags above tag_ub_ (point to point only)
  mpi_backend::MpiTypes types_;
  std::atomic<bool> aborted_{false};
  Status broken_;
  // Scratch reused across calls (counts/displacements as int, an alltoallv staging copy).
  std::vector<int> ints_a_, ints_b_, ints_c_, ints_d_;
  std::vector<char> staging_;
};

// The factory the backend registry calls. Creates the MPI communicator (collective over
// MPI_COMM_WORLD). `expected_rank`/`expected_size` are what the launcher environment said
// (HORA_RANK/HORA_SIZE or OMPI_COMM_WORLD_*); pass -1 to accept MPI's. A disagreement is
// kInvalidArgument naming both values.
StatusOr<std::unique_ptr<Communicator>> make_mpi_communicator(int expected_rank, int expected_size,
                                                              const MpiOptions& options = {});

}  // namespace collectives
}  // namespace hora
