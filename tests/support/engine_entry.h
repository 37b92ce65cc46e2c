// Helpers for tests that drive an engine::Engine directly, without hora::init (the device
// engine tests): one entry enqueued with its own handle, and float results compared.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/engine/engine.h"
#include "core/engine/handle_state.h"
#include "hora/hora.h"
#include "hora/status.h"

namespace hora {
namespace test_support {

// Enqueues `e` (its request and views filled in) with a fresh handle of `timeout_s`; the
// handle fails at once with the engine's refusal when the enqueue is refused.
inline Handle enqueue_entry(engine::Engine& eng, engine::Entry e, double timeout_s) {
  auto state = std::make_shared<detail::HandleState>(e.request.name, 1, timeout_s);
  e.handle = state;
  e.enqueued = engine::Clock::now();
  std::vector<engine::Entry> entries;
  entries.push_back(std::move(e));
  Status s = eng.enqueue(std::move(entries));
  if (!s.ok()) state->complete(s);
  return detail::HandleAccess::make(state);
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// OK when `got` equals `want` element for element; else an error naming `what`, the index
// and both values.
inline Status expect_eq(const std::vector<float>& got, const std::vector<float>& want,
                        const std::string& what) {
  if (got.size() != want.size())
    return Status::internal(what + ": " + std::to_string(got.size()) + " elements, want " +
                            std::to_string(want.size()));
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i])
      return Status::internal(what + "[" + std::to_string(i) + "] = " + std::to_string(got[i]) +
                              ", want " + std::to_string(want[i]));
  return Status::OK();
}

}  // namespace test_support
}  // namespace hora
