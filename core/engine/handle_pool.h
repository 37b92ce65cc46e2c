// make_handle_state: the HandleState (core/engine/handle_state.h) behind each collective call's
// Handle, from a per-thread pool of blocks (the shared_ptr's control block and the state in one
// block, as make_shared makes them), so a call's handle costs no malloc and no free in the
// steady state: a step has hundreds of handles in flight, past what the C library's per-thread
// cache keeps. A block freed on one thread joins that thread's pool (at most 1,024 kept per
// thread; beyond, and after the thread's pool is gone at its exit, it is freed).
#pragma once

#include <memory>
#include <string>

#include "core/engine/handle_state.h"

namespace hora {
namespace engine {

// The same state as std::make_shared<detail::HandleState>(name, parts, default_timeout_s,
// waiting), in a pooled block.
std::shared_ptr<detail::HandleState> make_handle_state(const std::string& name, int parts,
                                                       double default_timeout_s,
                                                       detail::WaitSignal* waiting);

}  // namespace engine
}  // namespace hora
