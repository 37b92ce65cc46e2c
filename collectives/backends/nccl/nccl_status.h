// NCCL's results as hora Status: the only place ncclResult_t meets Status. Pure functions;
// thread-safe.
#pragma once

#include <nccl.h>

#include <string>

#include "hora/status.h"

namespace hora {
namespace collectives {
namespace nccl_backend {

// OK for ncclSuccess. Otherwise "<what>: NCCL error <n> (<name>)[: <detail>]", where `detail`
// is NCCL's last-error text when given. Codes: ncclRemoteError -> kRemote (a peer or the
// network failed); ncclInvalidArgument, ncclInvalidUsage -> kInvalidArgument; ncclSystemError
// -> kIo; ncclUnhandledCudaError, ncclInternalError, ncclInProgress (never a final result) and
// anything else -> kInternal.
Status nccl_status(ncclResult_t result, const std::string& what, const char* detail = nullptr);

// NCCL's name of a result ("ncclRemoteError"), for messages and tests.
const char* nccl_result_name(ncclResult_t result);

}  // namespace nccl_backend
}  // namespace collectives
}  // namespace hora
