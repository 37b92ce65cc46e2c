#include "collectives/backends/nccl/nccl_status.h"

namespace hora {
namespace collectives {
namespace nccl_backend {

const char* nccl_result_name(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return "unknown ncclResult_t";
  }
}

Status nccl_status(ncclResult_t result, const std::string& what, const char* detail) {
  if (result == ncclSuccess) return Status::OK();
  std::string text = what + ": NCCL error " + std::to_string(static_cast<int>(result)) + " (" +
                     nccl_result_name(result) + ")";
  if (detail != nullptr && detail[0] != '\0') text += std::string(": ") + detail;
  switch (result) {
    case ncclRemoteError: return Status::remote(text);
    case ncclInvalidArgument:
    case ncclInvalidUsage: return Status::invalid_argument(text);
    case ncclSystemError: return Status::io(text);
    default: return Status::internal(text);
  }
}

}  // namespace nccl_backend
}  // namespace collectives
}  // namespace hora
