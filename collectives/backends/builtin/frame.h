// Frame header: the small header in front of every message on a builtin link (shared memory
// ring or TCP stream): {magic, tag, bytes, check}. The parser validates every field, so a
// corrupted or hostile stream is detected at the first bad header instead of being read as
// a length. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "hora/status.h"

namespace hora {
namespace collectives {
namespace builtin {

inline constexpr size_t kFrameHeaderBytes = 24;
inline constexpr uint32_t kFrameMagic = 0x48524d31;  // "HRM1"

struct FrameHeader {
  uint32_t tag = 0;
  uint64_t bytes = 0;
};

// Writes the kFrameHeaderBytes encoding of `header` to `out`.
void encode_frame_header(const FrameHeader& header, uint8_t* out);

// Parses kFrameHeaderBytes at `in`. Fails (kIo) on a wrong magic, a wrong check word,
// nonzero reserved bytes, or `bytes` above `max_bytes`; the message names `peer`.
StatusOr<FrameHeader> parse_frame_header(const uint8_t* in, uint64_t max_bytes, int peer);

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
