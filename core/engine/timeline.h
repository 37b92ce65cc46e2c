// Timeline: a Chrome trace (chrome://tracing, Perfetto) of what the engine did with each
// tensor, written by rank 0 when HORA_TIMELINE names a file (horarun --timeline sets it).
//
// One trace "thread" per tensor name; per collective the phases NEGOTIATE (enqueue until the
// ranks agreed), then PACK (copy into the fusion buffer), the algorithm ("ring", "tree", ...),
// UNPACK. Events are buffered and written as complete ("ph":"X") events; the file is a JSON
// array, valid after close() (the engine closes it at shutdown). Background thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <unordered_map>

#include "core/base/status.h"

namespace hora {
namespace engine {

class Timeline {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  // Opens `path` for writing; an empty path makes a disabled timeline. Fails (naming the
  // path and errno) when the file cannot be created.
  Status open(const std::string& path);
  bool enabled() const { return out_.is_open(); }

  void event(const std::string& tensor, const char* phase, TimePoint start, TimePoint end);
  // Finishes the JSON array and closes the file. Idempotent.
  void close();
  ~Timeline() { close(); }

 private:
  int thread_of(const std::string& tensor);

  std::ofstream out_;
  TimePoint origin_;
  std::unordered_map<std::string, int> threads_;
  bool first_ = true;
};

}  // namespace engine
}  // namespace hora
