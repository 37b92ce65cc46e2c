// MPI's own collectives as a baseline: MPI_Allreduce, MPI_Allgather, MPI_Bcast,
// MPI_Reduce_scatter_block and MPI_Alltoall on MPI_COMM_WORLD, on the benchmark's buffers.
// Available when hora was built with MPI and the job was launched by mpirun (which sets
// OMPI_COMM_WORLD_SIZE). MPI is initialised here when nobody has (HORA_BACKEND=mpi
// initialises it in hora::init), and then finalised when this object goes.
//
// Stock Open MPI allocates scratch memory per call, and first touches of fresh pages are slow
// (about 3 s per GiB on small machines), which makes it collapse at 64 MiB and beyond; glibc
// reuses freed memory when MALLOC_MMAP_MAX_=0 is in the environment of the MPI run. The
// README runs both.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "benchmarks/hora_bench/implementation.h"
#include "kernels/kernels.h"

#if HORA_HAVE_MPI
#include <mpi.h>

#include "collectives/backends/mpi/mpi_types.h"
#endif

namespace hora {
namespace bench {

#if HORA_HAVE_MPI
namespace {

// Stock MPI: its own types and ops (no half types: those rows show n/a).
bool mpi_type(DataType dtype, MPI_Datatype* out) {
  *out = collectives::mpi_backend::standard_datatype(dtype);
  return *out != MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(ReduceOp op) { return collectives::mpi_backend::standard_op(op); }

Status mpi_status(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return Status::OK();
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  return Status::remote(std::string(what) + " failed: " + std::string(text, length));
}

class MpiImplementation : public Implementation {
 public:
  explicit MpiImplementation(bool owns_mpi) : owns_mpi_(owns_mpi) {}
  ~MpiImplementation() override {
    if (owns_mpi_) MPI_Finalize();
  }
  MpiImplementation(const MpiImplementation&) = delete;
  MpiImplementation& operator=(const MpiImplementation&) = delete;

  const std::string& name() const override { return name_; }
  bool is_hora() const override { return false; }

  Status supports(const Call& call) const override {
    MPI_Datatype type = MPI_DATATYPE_NULL;
    if (!mpi_type(call.dtype, &type)) {
      return Status::unimplemented(std::string("MPI has no ") + data_type_name(call.dtype));
    }
    if (call.count > static_cast<size_t>(INT32_MAX)) {
      return Status::unimplemented("MPI counts are int");
    }
    return Status::OK();
  }

  // Blocking; MPI calls have no deadline (MPI's own error handling applies).
  Status run(const Call& c) override {
    MPI_Datatype type = MPI_DATATYPE_NULL;
    mpi_type(c.dtype, &type);
    const int count = static_cast<int>(c.count);
    int size = 1, rank = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const void* send = c.in_place ? MPI_IN_PLACE : c.in;
    switch (c.collective) {
      case Collective::kAllreduce:
        HORA_RETURN_IF_ERROR(
            mpi_status(MPI_Allreduce(send, c.out, count, type, mpi_op(c.op), MPI_COMM_WORLD),
                       "MPI_Allreduce"));
        if (c.op == ReduceOp::kAverage && size > 1) {
          kernels::scale(c.out, c.count, c.dtype, 1.0 / size);
        }
        return Status::OK();
      case Collective::kReducescatter:
        // In place: this rank's block of the input is the output; MPI_IN_PLACE then means
        // the whole input is `out - rank block`, i.e. `c.in`.
        HORA_RETURN_IF_ERROR(mpi_status(
            c.in_place
                ? MPI_Reduce_scatter_block(MPI_IN_PLACE, const_cast<void*>(c.in), count, type,
                                           mpi_op(c.op), MPI_COMM_WORLD)
                : MPI_Reduce_scatter_block(c.in, c.out, count, type, mpi_op(c.op), MPI_COMM_WORLD),
            "MPI_Reduce_scatter_block"));
        if (c.in_place && rank != 0) {
          std::memmove(c.out, c.in, c.count * data_type_bytes(c.dtype));
        }
        if (c.op == ReduceOp::kAverage && size > 1) {
          kernels::scale(c.out, c.count, c.dtype, 1.0 / size);
        }
        return Status::OK();
      case Collective::kAllgather:
        return mpi_status(
            c.in_place ? MPI_Allgather(MPI_IN_PLACE, 0, type, c.out, count, type, MPI_COMM_WORLD)
                       : MPI_Allgather(c.in, count, type, c.out, count, type, MPI_COMM_WORLD),
            "MPI_Allgather");
      case Collective::kBroadcast:
        if (!c.in_place && rank == c.root) {
          std::memcpy(c.out, c.in, c.count * data_type_bytes(c.dtype));
        }
        return mpi_status(MPI_Bcast(c.out, count, type, c.root, MPI_COMM_WORLD), "MPI_Bcast");
      case Collective::kAlltoall:
        return mpi_status(
            c.in_place ? MPI_Alltoall(MPI_IN_PLACE, 0, type, c.out, count, type, MPI_COMM_WORLD)
                       : MPI_Alltoall(c.in, count, type, c.out, count, type, MPI_COMM_WORLD),
            "MPI_Alltoall");
    }
    return Status::internal("mpi implementation: unknown collective");
  }

 private:
  const std::string name_ = "mpi";
  const bool owns_mpi_;
};

}  // namespace

StatusOr<std::unique_ptr<Implementation>> make_mpi_implementation(const ImplementationEnv& env) {
  // Launched by mpirun: hora's layout then came from OMPI_COMM_WORLD_* (or horarun --mpi).
  if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr) {
    return Status::failed_precondition(
        "--compare mpi needs a job launched by mpirun (OMPI_COMM_WORLD_SIZE is not set): run "
        "mpirun -np N hora-bench ... or horarun --mpi");
  }
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) return Status::failed_precondition("--compare mpi: MPI was already finalised");
  bool owns = false;
  if (!initialized) {
    int provided = 0;
    HORA_RETURN_IF_ERROR(mpi_status(
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread"));
    owns = true;
    // Only this (the main) thread calls MPI here: FUNNELED is enough.
    if (provided < MPI_THREAD_FUNNELED) {
      MPI_Finalize();
      return Status::failed_precondition("--compare mpi: MPI granted thread level " +
                                         std::to_string(provided) + ", below MPI_THREAD_FUNNELED");
    }
  }
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  auto impl = std::unique_ptr<Implementation>(new MpiImplementation(owns));
  if (size != env.size) {
    return Status::mismatch("--compare mpi: MPI_COMM_WORLD has " + std::to_string(size) +
                            " ranks but the hora job has " + std::to_string(env.size));
  }
  return impl;
}

#else

StatusOr<std::unique_ptr<Implementation>> make_mpi_implementation(const ImplementationEnv&) {
  return Status::unimplemented(
      "--compare mpi: hora was built without MPI (install libopenmpi-dev and reconfigure)");
}

#endif

}  // namespace bench
}  // namespace hora
