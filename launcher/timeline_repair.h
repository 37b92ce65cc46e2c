// Repair of a timeline whose writer died mid-write.
//
// Rank 0 writes the timeline (core/engine/timeline.h) as a JSON array, one event per line:
//   "[", then "{event}," lines, the last event without its comma, then "]" on a line of its own.
// Each write replaces the closing "]" with the new events and a new "]". A write of many pages
// is not atomic under SIGKILL (the kernel stops between pages), so a rank killed while writing
// can leave the array cut inside an event. horarun, which outlives its ranks, then cuts the
// file after its last complete event and closes the array again: the events written before the
// kill still load (json.load, chrome://tracing, Perfetto).
#pragma once

#include <cstdint>
#include <string>

#include "hora/status.h"

namespace hora {
namespace launcher {

struct TimelineRepair {
  bool repaired = false;      // false: the file was already a closed array; left untouched
  int64_t dropped_bytes = 0;  // bytes of the cut event (0 when only the "]" was missing)
};

// Checks the timeline at `path` and repairs it as above. Looks at the last kMaxTailBytes only
// (an event is one line, far shorter). Fails, leaving the file untouched, when it cannot be
// opened or read, or when its tail is not a hora timeline (no complete event or "[" line in
// it); the message names the path.
StatusOr<TimelineRepair> repair_timeline(const std::string& path);

constexpr int64_t kMaxTailBytes = 1 << 20;

}  // namespace launcher
}  // namespace hora
