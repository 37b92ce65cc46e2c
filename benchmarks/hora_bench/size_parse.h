// Byte sizes on hora-bench's command line: "8", "64K", "1M", "4G" (binary multiples: K = 1024),
// and their human-readable form for headers and plot ticks. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <string>

#include "hora/status.h"

namespace hora {
namespace bench {

// Parses a non-negative integer with an optional K, M or G suffix (either case, an optional
// trailing "B" or "iB": "64KiB", "1MB"). kInvalidArgument names `what` (the flag, "-b") and
// the text when it is empty, negative, has an unknown suffix or overflows 64 bits.
StatusOr<size_t> parse_size(const std::string& text, const std::string& what);

// "8 B", "64 KiB", "1 MiB", "1.5 GiB": the largest unit that keeps the number >= 1.
std::string format_size(size_t bytes);
// The same, compact for plot ticks: "8", "64K", "1M", "1G".
std::string format_size_short(size_t bytes);

}  // namespace bench
}  // namespace hora
