#include "collectives/backends/mpi/mpi_status.h"

#include <mpi.h>

#include <cstdio>

namespace hora {
namespace collectives {
namespace mpi_backend {

Status mpi_status(int code, const std::string& what) {
  if (code == MPI_SUCCESS) return Status::OK();
  char text[MPI_MAX_ERROR_STRING + 1] = {0};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) {
    std::snprintf(text, sizeof(text), "MPI error code %d", code);
  }
  int error_class = code;
  if (MPI_Error_class(code, &error_class) != MPI_SUCCESS) error_class = code;
  std::string message = "mpi: " + what + " failed: " + text + " (MPI error class " +
                        std::to_string(error_class) + ")";
  switch (error_class) {
    case MPI_ERR_TRUNCATE:
      return Status::mismatch(message + ": the peer sent more bytes than this rank expected");
    case MPI_ERR_ARG:
    case MPI_ERR_COUNT:
    case MPI_ERR_TYPE:
    case MPI_ERR_RANK:
    case MPI_ERR_TAG:
    case MPI_ERR_ROOT:
    case MPI_ERR_BUFFER:
    case MPI_ERR_OP: return Status::invalid_argument(message);
    default: return Status::io(message);
  }
}

std::string mpi_thread_level_name(int level) {
  if (level == MPI_THREAD_SINGLE) return "MPI_THREAD_SINGLE";
  if (level == MPI_THREAD_FUNNELED) return "MPI_THREAD_FUNNELED";
  if (level == MPI_THREAD_SERIALIZED) return "MPI_THREAD_SERIALIZED";
  if (level == MPI_THREAD_MULTIPLE) return "MPI_THREAD_MULTIPLE";
  return "unknown thread level " + std::to_string(level);
}

}  // namespace mpi_backend
}  // namespace collectives
}  // namespace hora
