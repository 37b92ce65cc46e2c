// Handle (hora/types.h): waiting on a HandleState, and its completion callback.
#include <chrono>
#include <functional>
#include <string>
#include <utility>

#include "core/engine/handle_state.h"
#include "hora/types.h"

namespace hora {
namespace {
const std::string kInvalidName = "<invalid handle>";
const std::vector<uint8_t> kNoBytes;
const std::vector<int64_t> kNoInts;

// A thread is about to wait on `state`: unless it is complete, tell the engine (which ends
// its burst) and, when it allows, run the engine's rounds on this thread (WaitSignal::help).
// A help may outlast a timed wait's timeout by at most one round (bounded by HORA_TIMEOUT_S).
// Returns true, with the final status in *status, when the state was already done (the
// caller then needs no second look under the mutex).
bool help_engine(detail::HandleState& state, bool wait, Status* status) {
  if (state.is_done()) {
    *status = state.final_status();
    return true;
  }
  if (!wait) return false;
  bool help = false;
  {
    MutexLock lock(&state.mu);
    if (state.is_done()) {
      *status = state.status;
      return true;
    }
    if (state.waiting == nullptr) return false;
    help = state.waiting->waiting();
  }
  if (help) state.waiting->help(state);
  return false;
}
}  // namespace

const std::string& Handle::name() const { return state_ ? state_->name() : kInvalidName; }

Status Handle::wait() {
  if (!state_) return Status::failed_precondition("wait() on an invalid (default) hora::Handle");
  // No deadline of its own: completion is bounded by the engine, which fails the handle
  // within HORA_TIMEOUT_S (plus a margin) of a peer dying or stopping. A wait of its own would
  // race that deadline and report a bare timeout instead of the rank at fault, and would give
  // up on a rank that is merely slow to submit (it is alive: its engine answers every round).
  Status status;
  if (help_engine(*state_, true, &status)) return status;
  MutexLock lock(&state_->mu);
  if (state_->watch())
    while (!state_->is_done()) state_->cv->wait(state_->mu);
  return state_->status;
}

Status Handle::wait(std::chrono::milliseconds timeout) {
  if (!state_) return Status::failed_precondition("wait() on an invalid (default) hora::Handle");
  const auto until = std::chrono::steady_clock::now() + timeout;
  // A zero timeout only looks; it neither ends the engine's burst nor helps.
  Status status;
  if (help_engine(*state_, timeout.count() > 0, &status)) return status;
  MutexLock lock(&state_->mu);
  if (state_->watch())
    while (!state_->is_done() && std::chrono::steady_clock::now() < until)
      state_->cv->wait_until(state_->mu, until);
  if (!state_->is_done()) {
    return Status::timeout("tensor '" + state_->name() + "' is not complete after " +
                           std::to_string(timeout.count()) +
                           " ms: not every rank has submitted it yet, or it is still running "
                           "(rank 0 logs the missing ranks after HORA_STALL_WARNING_S)");
  }
  return state_->status;
}

Status Handle::wait_on_stream(void* stream) {
  return wait_on_stream(stream, std::chrono::hours(24 * 365));
}

Status Handle::wait_on_stream(void* stream, std::chrono::milliseconds timeout) {
  if (!state_)
    return Status::failed_precondition("wait_on_stream() on an invalid (default) hora::Handle");
  const auto until = std::chrono::steady_clock::now() + timeout;
  Status ignored;  // done or not, the stream waiter is read below
  help_engine(*state_, timeout.count() > 0, &ignored);
  std::function<Status(void*)> waiter;
  {
    MutexLock lock(&state_->mu);
    // A device collective publishes its completion event before it completes; a host one
    // (or a failure) only completes.
    if (state_->watch())
      while (!state_->is_done() && !(state_->stream_waiter && state_->status.ok()) &&
             std::chrono::steady_clock::now() < until)
        state_->cv->wait_until(state_->mu, until);
    if (!(state_->stream_waiter && state_->status.ok())) {
      if (state_->is_done()) return state_->status;
      return Status::timeout("tensor '" + state_->name() + "' is not complete after " +
                             std::to_string(timeout.count()) + " ms");
    }
    waiter = state_->stream_waiter;
  }
  return waiter(stream);  // outside the mutex: it calls the GPU runtime
}

bool Handle::poll() const { return state_ && state_->is_done(); }

void Handle::on_complete(std::function<void(const Status&)> callback) const {
  if (!state_) {
    if (callback)
      callback(Status::failed_precondition("on_complete() on an invalid (default) hora::Handle"));
    return;
  }
  state_->on_complete(std::move(callback));
}

int Handle::last_joined() const {
  if (!state_) return -1;
  // Written (under the mutex) before completion, so completion callbacks see it too.
  MutexLock lock(&state_->mu);
  const int joined = state_->join_result;
  const detail::SetContext* set = state_->set_context.get();
  if (set == nullptr || joined < 0 || joined >= static_cast<int>(set->ranks.size())) return joined;
  return set->ranks[static_cast<size_t>(joined)];
}

const std::vector<uint8_t>& Handle::output() const { return state_ ? state_->output : kNoBytes; }
const std::vector<int64_t>& Handle::output_shape() const {
  return state_ ? state_->output_shape : kNoInts;
}
const std::vector<int64_t>& Handle::received_splits() const {
  return state_ ? state_->received_splits : kNoInts;
}

}  // namespace hora
