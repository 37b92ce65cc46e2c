// The errors a backend communicator (gloo, mpi, nccl) gives for a call it can no longer make,
// worded alike by every backend. Error paths only.
#pragma once

#include <string>

#include "hora/status.h"

namespace hora {
namespace collectives {

// kRemote "<backend>: <who>: <what> after abort(): aborted".
inline Status aborted_status(const char* backend, const std::string& who, const std::string& what) {
  return Status::remote(std::string(backend) + ": " + who + ": " + what +
                        " after abort(): aborted");
}

// `broken`'s code, "<backend>: <who>: <what> on a communicator broken by an earlier failure:
// <broken's message>".
inline Status broken_status(const char* backend, const std::string& who, const std::string& what,
                            const Status& broken) {
  return Status(broken.code(),
                std::string(backend) + ": " + who + ": " + what +
                    " on a communicator broken by an earlier failure: " + broken.message());
}

}  // namespace collectives
}  // namespace hora
