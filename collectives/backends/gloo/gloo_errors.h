// Turning gloo's exceptions into Status: the only place gloo's error types are caught.
//
// gloo reports failures by throwing (gloo::IoException for a broken or timed-out pair,
// gloo::Exception for the rest, gloo::EnforceNotMet for its internal checks). Every call into
// gloo from this folder goes through gloo_call(), so nothing above backends/ sees an exception.
// Codes: a message about a timeout gives kTimeout; an IoException otherwise kRemote (the peer
// closed or reset the connection); any other gloo::Exception kIo; anything else kInternal.
// Thread-safe (pure functions).
#pragma once

#include <exception>
#include <string>
#include <utility>

#include "hora/status.h"

namespace hora {
namespace collectives {
namespace gloo_backend {

enum class GlooErrorKind { kIo, kOther, kUnknown };

// `what` names the operation and the peer when known ("rank 1: recv from rank 0 (tag 7)").
Status gloo_error(const std::string& what, GlooErrorKind kind, const std::string& message);

// Translates the exception being handled; call only inside a catch block.
Status current_exception_status(const std::string& what) noexcept;

// Runs f() (which may throw anything gloo throws) and returns its outcome as a Status.
template <typename F>
Status gloo_call(const std::string& what, F&& f) noexcept {
  try {
    std::forward<F>(f)();
    return Status::OK();
  } catch (...) {
    return current_exception_status(what);
  }
}

}  // namespace gloo_backend
}  // namespace collectives
}  // namespace hora
