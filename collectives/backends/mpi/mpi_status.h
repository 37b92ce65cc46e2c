// Turning MPI error codes into Status: the only place MPI error codes are interpreted.
//
// hora's MPI communicator sets MPI_ERRORS_RETURN on its communicator, so every MPI call
// returns a code instead of aborting the job; each call in this folder goes through
// mpi_status(), which gives OK for MPI_SUCCESS and otherwise a Status whose message names the
// operation (`what`, e.g. "rank 1: MPI_Irecv from rank 0 (tag 7, 64 bytes)"), MPI's own text
// (MPI_Error_string) and the error class.
// Codes: MPI_ERR_TRUNCATE gives kMismatch (a peer sent more than was expected); argument
// classes (MPI_ERR_ARG, _COUNT, _TYPE, _RANK, _TAG, _ROOT, _BUFFER, _OP) kInvalidArgument;
// anything else kIo (a transport or runtime failure). Thread-safe (pure functions).
#pragma once

#include <string>

#include "hora/status.h"

namespace hora {
namespace collectives {
namespace mpi_backend {

// OK when code == MPI_SUCCESS.
Status mpi_status(int code, const std::string& what);

// "MPI_THREAD_SERIALIZED", ...; "unknown thread level N" otherwise.
std::string mpi_thread_level_name(int level);

}  // namespace mpi_backend
}  // namespace collectives
}  // namespace hora
