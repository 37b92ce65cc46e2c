// The one place where a hora::Status becomes a Python exception (Horovod's ThrowIfError).
// Each StatusCode maps to one class of hora.errors, all under hora.HoraError:
//   kInvalidArgument    InvalidArgumentError (also a ValueError)
//   kFailedPrecondition FailedPreconditionError
//   kMismatch           MismatchError (ranks asked for different things under one name)
//   kTimeout            HoraTimeoutError (also the builtin TimeoutError)
//   kRemote             RemoteError (a peer failed or left)
//   kIo                 HoraIOError (also an OSError)
//   kUnimplemented      UnimplementedError (also a NotImplementedError)
//   kInternal           InternalError
// REQUIRES: the GIL.
#pragma once

#include "hora/status.h"

namespace hora {
namespace python {

// Raises the exception for `status`. REQUIRES: !status.ok().
[[noreturn]] void throw_status(const Status& status);

// Raises when `status` is an error.
inline void check(const Status& status) {
  if (!status.ok()) throw_status(status);
}

template <typename T>
T check(StatusOr<T> result) {
  if (!result.ok()) throw_status(result.status());
  return std::move(result).value();
}

// The hora.errors class name for a code ("MismatchError").
const char* exception_name(StatusCode code);

}  // namespace python
}  // namespace hora
