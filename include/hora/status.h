// Status: the result of an operation that can fail, and StatusOr<T>, a value or a Status.
//
// An OK Status holds no allocation (a null pointer), so returning OK on the hot path is free.
// A failed Status owns a heap-allocated {code, message}. Status is a value type: copyable and
// movable; it is not thread-safe to mutate one object from two threads, but distinct objects
// may be used freely from any thread.
//
// Propagate with HORA_RETURN_IF_ERROR(expr), which appends " (at file:line)" to the message
// as the error passes each level, so a failure carries its own trace without a log line at
// every hop. Bugs are not errors: use HORA_CHECK (hora/logging.h) for those.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace hora {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument,     // bad input from the user (a value, a flag, an environment variable)
  kFailedPrecondition,  // wrong call order: not initialised, already shut down
  kMismatch,            // ranks disagree about a collective (dtype, shape, op, root)
  kTimeout,             // a deadline passed while waiting on a peer
  kRemote,              // a peer failed or left
  kIo,                  // a system call or the network failed
  kUnimplemented,       // a backend lacks this operation
  kInternal,            // a bug surfaced as an error
};

// Returns the code's name, e.g. "InvalidArgument".
const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message);
  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;
  ~Status() = default;

  static Status OK() { return Status(); }
  static Status invalid_argument(std::string msg) {
    return Status(StatusCode::kInvalidArgument, std::move(msg));
  }
  static Status failed_precondition(std::string msg) {
    return Status(StatusCode::kFailedPrecondition, std::move(msg));
  }
  static Status mismatch(std::string msg) { return Status(StatusCode::kMismatch, std::move(msg)); }
  static Status timeout(std::string msg) { return Status(StatusCode::kTimeout, std::move(msg)); }
  static Status remote(std::string msg) { return Status(StatusCode::kRemote, std::move(msg)); }
  static Status io(std::string msg) { return Status(StatusCode::kIo, std::move(msg)); }
  static Status unimplemented(std::string msg) {
    return Status(StatusCode::kUnimplemented, std::move(msg));
  }
  static Status internal(std::string msg) { return Status(StatusCode::kInternal, std::move(msg)); }

  bool ok() const { return state_ == nullptr; }
  StatusCode code() const { return state_ ? state_->code : StatusCode::kOk; }
  // The message without the code; empty for OK.
  const std::string& message() const;
  // "Timeout: waiting for rank 3 ..."; "OK" for OK.
  std::string to_string() const;

  // Returns a copy with `context` appended to the message (used by HORA_RETURN_IF_ERROR).
  Status with_context(const std::string& context) const;

  // Drops this Status on purpose. Status and StatusOr are [[nodiscard]]: a caller that
  // deliberately does not act on a failure (a best-effort clean-up whose failure changes
  // nothing) says so with .IgnoreError(), as with Abseil's absl::Status, never by a silent drop.
  void IgnoreError() const {}

 private:
  struct State {
    StatusCode code;
    std::string message;
  };
  std::unique_ptr<State> state_;
};

inline bool operator==(const Status& a, const Status& b) {
  return a.code() == b.code() && a.message() == b.message();
}

// StatusOr<T>: either a T or a non-OK Status. Accessing value() of an error is a bug (checked).
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design, like absl
  StatusOr(Status status);                         // NOLINT: REQUIRES: !status.ok()

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() &;
  const T& value() const&;
  T&& value() &&;
  T* operator->() { return &value(); }
  T& operator*() { return value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

namespace detail {
[[noreturn]] void status_or_bad_access(const Status& status);
std::string source_location(const char* file, int line);
}  // namespace detail

template <typename T>
StatusOr<T>::StatusOr(Status status)
    : status_(status.ok() ? Status::internal("StatusOr constructed from an OK Status")
                          : std::move(status)) {}
template <typename T>
T& StatusOr<T>::value() & {
  if (!status_.ok()) detail::status_or_bad_access(status_);
  return *value_;
}
template <typename T>
const T& StatusOr<T>::value() const& {
  if (!status_.ok()) detail::status_or_bad_access(status_);
  return *value_;
}
template <typename T>
T&& StatusOr<T>::value() && {
  if (!status_.ok()) detail::status_or_bad_access(status_);
  return std::move(*value_);
}

}  // namespace hora

#define HORA_STATUS_CONCAT_INNER(a, b) a##b
#define HORA_STATUS_CONCAT(a, b) HORA_STATUS_CONCAT_INNER(a, b)

// Evaluates `expr` (a Status); if it failed, returns it with " (at file:line)" appended.
#define HORA_RETURN_IF_ERROR(expr)                                                           \
  do {                                                                                       \
    ::hora::Status hora_status_ = (expr);                                                    \
    if (!hora_status_.ok())                                                                  \
      return hora_status_.with_context(::hora::detail::source_location(__FILE__, __LINE__)); \
  } while (0)

// `HORA_ASSIGN_OR_RETURN(auto x, f())`: evaluates a StatusOr, returns its Status if it failed,
// else moves the value into the declaration.
#define HORA_ASSIGN_OR_RETURN(decl, expr) \
  HORA_ASSIGN_OR_RETURN_IMPL(HORA_STATUS_CONCAT(hora_statusor_, __LINE__), decl, expr)
#define HORA_ASSIGN_OR_RETURN_IMPL(tmp, decl, expr)                                        \
  auto tmp = (expr);                                                                       \
  if (!tmp.ok())                                                                           \
    return tmp.status().with_context(::hora::detail::source_location(__FILE__, __LINE__)); \
  decl = std::move(tmp).value()
