#include "hora/status.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace hora {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kFailedPrecondition: return "FailedPrecondition";
    case StatusCode::kMismatch: return "Mismatch";
    case StatusCode::kTimeout: return "Timeout";
    case StatusCode::kRemote: return "Remote";
    case StatusCode::kIo: return "Io";
    case StatusCode::kUnimplemented: return "Unimplemented";
    case StatusCode::kInternal: return "Internal";
  }
  return "Unknown";
}

Status::Status(StatusCode code, std::string message) {
  if (code != StatusCode::kOk) state_ = std::make_unique<State>(State{code, std::move(message)});
}

Status::Status(const Status& other)
    : state_(other.state_ ? std::make_unique<State>(*other.state_) : nullptr) {}

Status& Status::operator=(const Status& other) {
  if (this != &other) state_ = other.state_ ? std::make_unique<State>(*other.state_) : nullptr;
  return *this;
}

const std::string& Status::message() const {
  static const std::string* const kEmpty = new std::string();
  return state_ ? state_->message : *kEmpty;
}

std::string Status::to_string() const {
  if (ok()) return "OK";
  return std::string(status_code_name(state_->code)) + ": " + state_->message;
}

Status Status::with_context(const std::string& context) const {
  if (ok()) return Status();
  return Status(state_->code, state_->message + " " + context);
}

namespace detail {

void status_or_bad_access(const Status& status) {
  std::fprintf(stderr, "hora: FATAL: StatusOr::value() on an error: %s\n",
               status.to_string().c_str());
  std::abort();
}

std::string source_location(const char* file, int line) {
  const char* base = std::strrchr(file, '/');
  return std::string("(at ") + (base ? base + 1 : file) + ":" + std::to_string(line) + ")";
}

}  // namespace detail
}  // namespace hora
